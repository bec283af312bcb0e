// The Product and Availability types, the admin stock mutations and the root fields that return them.
import { builder } from './builder.js';
import { Money, UserError } from './common.js';
import type { Availability as AvailabilityShape, Product as ProductShape } from '../orders/catalog.js';
import * as r from '../resolvers/catalog.js';

export const Availability = builder.objectRef<AvailabilityShape>('Availability').implement({
  description: 'How many units a new order can claim right now. Held units are not available.',
  fields: (t) => ({
    sku: t.exposeString('sku', { description: 'The product.' }),
    available: t.exposeInt('available', {
      description: 'Units a new order can claim now (excludes units held for other shoppers).',
    }),
    soldOut: t.exposeBoolean('soldOut', {
      description: 'True when available is 0, including while the last unit is held for someone.',
    }),
    version: t.field({
      type: 'Int',
      description:
        "Grows on every change of this SKU's stock: keep the highest seen and drop events with a lower or equal one.",
      resolve: (a) => a.version,
    }),
    updatedAt: t.field({
      type: 'DateTime',
      description: 'When the stock figures last changed.',
      resolve: (a) => a.updatedAt,
    }),
  }),
});

const BundleComponent = builder.objectRef<{ sku: string; quantity: number }>('BundleComponent').implement({
  description: 'One product in a bundle, and how many of it one bundle takes.',
  fields: (t) => ({ sku: t.exposeString('sku'), quantity: t.exposeInt('quantity') }),
});
const BundleComponentInput = builder.inputType('BundleComponentInput', {
  fields: (t) => ({
    sku: t.string({ required: true }),
    quantity: t.int({ required: true, description: '1-1000 units of it per bundle.' }),
  }),
});

export const Product = builder.objectRef<ProductShape>('Product').implement({
  description: 'Something for sale, with its price and live availability.',
  fields: (t) => ({
    sku: t.exposeString('sku', { description: 'Stock keeping unit: the product id.' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    price: t.field({
      type: Money,
      description: 'Unit price.',
      resolve: (p) => ({ amount: p.priceAmount, currencyCode: p.currency }),
    }),
    availability: t.field({ type: Availability, description: 'Live stock figures.', resolve: (p) => p.availability }),
    components: t.field({
      type: [BundleComponent],
      nullable: true,
      description:
        'A bundle: the products it is made of (its availability is the minimum over them); null for a plain product.',
      resolve: (p, _args, ctx) => r.components(ctx, p.sku),
    }),
  }),
});

builder.queryFields((t) => ({
  product: t.field({
    type: Product,
    nullable: true,
    description: 'One product by SKU, or null if there is none.',
    args: { sku: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => r.product(ctx, args.sku),
  }),
  products: t.field({
    type: [Product],
    nullable: { list: false, items: true },
    description: 'Products by SKU, in the order asked; null where a SKU is unknown. At most 100 SKUs.',
    args: { skus: t.arg.stringList({ required: true }) },
    resolve: (_root, args, ctx) => r.products(ctx, args.skus),
  }),
}));

const CreateProductInput = builder.inputType('CreateProductInput', {
  description: 'A new product and its opening stock.',
  fields: (t) => ({
    sku: t.string({ required: true, description: '1-64 letters, digits, dot, dash or underscore.' }),
    name: t.string({ required: true }),
    priceAmount: t.int({ required: true, description: 'Unit price in minor units.' }),
    currencyCode: t.string({ required: true, description: 'ISO 4217, e.g. USD.' }),
    initialStock: t.int({ required: false, description: 'Units available at once (default 0).' }),
    purchaseLimit: t.int({
      required: false,
      description: 'The most units one customer may hold or buy (see Product.purchaseLimit); absent: no limit.',
    }),
    components: t.field({
      type: [BundleComponentInput],
      required: false,
      description:
        'Makes the product a bundle of these existing products: claiming it claims every component in one transaction. No initialStock.',
    }),
  }),
});
const CreateProductPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.createProduct>>>('CreateProductPayload')
  .implement({
    fields: (t) => ({
      product: t.field({ type: Product, nullable: true, resolve: (p) => p.product }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

const RestockInput = builder.inputType('RestockInput', {
  description: 'Units to add to available.',
  fields: (t) => ({
    sku: t.string({ required: true }),
    quantity: t.int({ required: true, description: 'Must be > 0.' }),
    idempotencyKey: t.string({
      required: false,
      description:
        'Minted by the client, sent again on every retry (1 to 255 characters): applied once, the first answer replayed; a different request under the same key is IDEMPOTENCY_KEY_REUSED.',
    }),
  }),
});
const SetStockInput = builder.inputType('SetStockInput', {
  description: 'A stock-take: set available to an absolute count.',
  fields: (t) => ({
    sku: t.string({ required: true }),
    available: t.int({ required: true, description: 'The new available count (held and sold units are untouched).' }),
    expectedAvailable: t.int({
      required: false,
      description: 'Compare-and-set: apply only if available still equals this; else STALE.',
    }),
    idempotencyKey: t.string({
      required: false,
      description:
        'Minted by the client, sent again on every retry (1 to 255 characters): applied once, the first answer replayed; a different request under the same key is IDEMPOTENCY_KEY_REUSED.',
    }),
  }),
});
const StockPayload = (name: string) =>
  builder.objectRef<Awaited<ReturnType<typeof r.restock>>>(name).implement({
    fields: (t) => ({
      availability: t.field({ type: Availability, nullable: true, resolve: (p) => p.availability }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
      replayed: t.exposeBoolean('replayed', {
        description:
          'True when this answer replays an earlier request with the same idempotencyKey (nothing was written).',
      }),
    }),
  });
const RestockPayload = StockPayload('RestockPayload');
const SetStockPayload = StockPayload('SetStockPayload');

builder.mutationFields((t) => ({
  createProduct: t.field({
    type: CreateProductPayload,
    description: 'Admin: create a product with its opening stock.',
    args: { input: t.arg({ type: CreateProductInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.createProduct(ctx, input),
  }),
  restock: t.field({
    type: RestockPayload,
    description: 'Admin: add units to available.',
    args: { input: t.arg({ type: RestockInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.restock(ctx, input),
  }),
  setStock: t.field({
    type: SetStockPayload,
    description:
      'Admin: set available, optionally only if it still equals expectedAvailable (answers STALE otherwise).',
    args: { input: t.arg({ type: SetStockInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.setStock(ctx, input),
  }),
}));
