import SchemaBuilder from '@pothos/core';
import type { Context } from '../resolvers/context.js';

/** The Pothos builder: configuration only; every type lives in its own file. */
export const builder = new SchemaBuilder<{
  Context: Context;
  Scalars: { DateTime: { Input: Date; Output: Date | string } };
  DefaultFieldNullability: false;
}>({
  // Output fields are non-null unless a field says otherwise: the contract of ARCHITECTURE.md section 4.
  defaultFieldNullability: false,
});

builder.scalarType('DateTime', {
  description: 'An instant, as an ISO 8601 string in UTC (e.g. 2026-11-29T08:35:01.000Z).',
  serialize: (v) => (v instanceof Date ? v.toISOString() : new Date(v).toISOString()),
  parseValue: (v) => {
    const d = new Date(String(v));
    if (Number.isNaN(d.getTime())) throw new TypeError('DateTime must be an ISO 8601 string');
    return d;
  },
});

builder.queryType({ description: 'Reads: products, their live availability, and your own orders.' });
builder.mutationType({ description: 'Writes. Each takes one `input` and returns a payload with `userErrors`.' });
builder.subscriptionType({
  description: 'Live events over graphql-ws on /graphql (API key in connection_init). At least once: drop repeats by version/updatedAt.',
});
