// Relay connections a storefront pages through: the catalog (in SKU order) and orders (newest first).
import { builder } from './builder.js';
import { Product } from './product.js';
import { Order, OrderStatus } from './order.js';
import * as r from '../resolvers/pages.js';
import type { Page } from '../orders/pages.js';
import type { OrderRecord } from '../orders/orders.js';

type ProductNode = Awaited<ReturnType<typeof r.catalog>>['edges'][number]['node'];

export const PageInfo = builder.objectRef<Page<unknown>['pageInfo']>('PageInfo').implement({
  description: 'Where a page ends (Relay): pass endCursor as `after` for the next page while hasNextPage.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', {}),
    endCursor: t.exposeString('endCursor', { nullable: true, description: 'Opaque; null on an empty page.' }),
  }),
});

const ProductEdge = builder.objectRef<{ node: ProductNode; cursor: string }>('ProductEdge').implement({
  fields: (t) => ({ node: t.field({ type: Product, resolve: (e) => e.node }), cursor: t.exposeString('cursor', {}) }),
});
const ProductConnection = builder.objectRef<Page<ProductNode>>('ProductConnection').implement({
  description: 'A page of products with their availability.',
  fields: (t) => ({
    edges: t.field({ type: [ProductEdge], resolve: (c) => c.edges }),
    pageInfo: t.field({ type: PageInfo, resolve: (c) => c.pageInfo }),
  }),
});
const OrderEdge = builder.objectRef<{ node: OrderRecord; cursor: string }>('OrderEdge').implement({
  fields: (t) => ({ node: t.field({ type: Order, resolve: (e) => e.node }), cursor: t.exposeString('cursor', {}) }),
});
const OrderConnection = builder.objectRef<Page<OrderRecord>>('OrderConnection').implement({
  description: 'A page of orders, newest first.',
  fields: (t) => ({
    edges: t.field({ type: [OrderEdge], resolve: (c) => c.edges }),
    pageInfo: t.field({ type: PageInfo, resolve: (c) => c.pageInfo }),
  }),
});

builder.queryFields((t) => ({
  catalog: t.field({
    type: ProductConnection,
    description: 'The catalog page by page, in SKU order. `first`: 1 to 100 (default 20).',
    args: { first: t.arg.int({ required: false }), after: t.arg.string({ required: false }) },
    resolve: (_root, args, ctx) => r.catalog(ctx, args),
  }),
  orders: t.field({
    type: OrderConnection,
    description:
      "Orders newest first: a storefront key sees its own client's, an admin key every client's. `first`: 1 to 100 (default 20).",
    args: {
      customerId: t.arg.id({ required: false }),
      status: t.arg({ type: OrderStatus, required: false }),
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_root, args, ctx) =>
      r.orders(ctx, { ...args, customerId: args.customerId == null ? null : String(args.customerId) }),
  }),
}));
