// The Pothos builder: configuration only (plugins, context, scalars); every type lives in its own file.
import SchemaBuilder from '@pothos/core';
import type { Context } from '../resolvers/context.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  // ID inputs arrive as strings (graphql-js's ID parses an integer literal to its string form)
  Scalars: { DateTime: { Input: Date; Output: Date | string }; ID: { Input: string; Output: string } };
  DefaultFieldNullability: false;
}>({
  // Output fields are non-null unless a field says otherwise: the contract of docs/api.md.
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
  description:
    'Live events over graphql-ws on /graphql (API key in connection_init). At least once: drop repeats by version/updatedAt.',
});
