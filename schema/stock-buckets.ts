// Stock buckets (docs/capacity.md): the admin mutation that splits a hot SKU's units across several stock rows.
import { builder } from './builder.js';
import { UserError } from './common.js';
import { Product } from './product.js';
import * as r from '../resolvers/stock-buckets.js';

const SetStockBucketsInput = builder.inputType('SetStockBucketsInput', {
  description: "How many stock rows one product's units are spread over.",
  fields: (t) => ({
    sku: t.string({
      required: true,
      description: 'The product (not a bundle, a bundle component, nor listed on a channel).',
    }),
    buckets: t.int({
      required: true,
      description:
        '1 to 64; 1 is one stock row. More rows let that many claims of the product commit at once; its figures stay the sums.',
    }),
  }),
});
const SetStockBucketsPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.setStockBuckets>>>('SetStockBucketsPayload')
  .implement({
    fields: (t) => ({
      product: t.field({
        type: Product,
        nullable: true,
        description: 'The product (its availability unchanged); null when refused.',
        resolve: (p) => p.product,
      }),
      userErrors: t.field({
        type: [UserError],
        description: 'INVALID_INPUT (buckets outside 1-64, or a bundle: its components may have buckets), UNKNOWN_SKU.',
        resolve: (p) => p.userErrors,
      }),
    }),
  });

builder.mutationField('setStockBuckets', (t) =>
  t.field({
    type: SetStockBucketsPayload,
    description: "Admin: spread a product's stock over 1-64 rows (docs/capacity.md); availability does not change.",
    args: { input: t.arg({ type: SetStockBucketsInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.setStockBuckets(ctx, input),
  }),
);
