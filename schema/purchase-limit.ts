// Fair drops: a product's purchase limit (I12) and the admin mutation that sets it.
import { builder } from './builder.js';
import { UserError } from './common.js';
import { Product } from './product.js';
import * as r from '../resolvers/purchase-limit.js';

builder.objectField(Product, 'purchaseLimit', (t) =>
  t.field({
    type: 'Int',
    nullable: true,
    description:
      'The most units one customer (your API client + customerId) may hold or have bought of this product, over orders ' +
      'not released, expired or cancelled; past it placeOrder answers PURCHASE_LIMIT. Null: no limit.',
    resolve: (p) => p.purchaseLimit,
  }),
);

const SetPurchaseLimitInput = builder.inputType('SetPurchaseLimitInput', {
  description: 'A per-customer purchase limit for one product.',
  fields: (t) => ({
    sku: t.string({ required: true, description: 'The product.' }),
    limit: t.int({
      required: false,
      description:
        'At least 1; null or absent removes the limit. Lowering it below what a customer already holds refuses their next order, never a release.',
    }),
  }),
});
const SetPurchaseLimitPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.setPurchaseLimit>>>('SetPurchaseLimitPayload')
  .implement({
    fields: (t) => ({
      product: t.field({
        type: Product,
        nullable: true,
        description: 'The product with its new limit; null when refused.',
        resolve: (p) => p.product,
      }),
      userErrors: t.field({
        type: [UserError],
        description: 'INVALID_INPUT (limit below 1), UNKNOWN_SKU.',
        resolve: (p) => p.userErrors,
      }),
    }),
  });

builder.mutationField('setPurchaseLimit', (t) =>
  t.field({
    type: SetPurchaseLimitPayload,
    description: "Admin: set or remove a product's per-customer purchase limit; takes effect for the next claim.",
    args: { input: t.arg({ type: SetPurchaseLimitInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.setPurchaseLimit(ctx, input),
  }),
);
