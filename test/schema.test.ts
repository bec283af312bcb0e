import { describe, expect, it } from 'vitest';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from '../schema/index.js';

describe('the public GraphQL contract', () => {
  it('matches the reviewed snapshot (every API change shows up in review)', async () => {
    await expect(printSchema(lexicographicSortSchema(schema))).toMatchFileSnapshot('./__snapshots__/schema.graphql');
  });

  it('keeps the names of docs/api.md', () => {
    const sdl = printSchema(schema);
    for (const needle of [
      'product(sku: String!): Product',
      'products(skus: [String!]!): [Product]!',
      'order(id: ID!, token: String): Order',
      'placeOrder(input: PlaceOrderInput!): PlaceOrderPayload!',
      'releaseReservation(input: ReleaseReservationInput!): ReleaseReservationPayload!',
      'restock(input: RestockInput!): RestockPayload!',
      'setStock(input: SetStockInput!): SetStockPayload!',
      'createProduct(input: CreateProductInput!): CreateProductPayload!',
      'replayed: Boolean!',
      'userErrors: [UserError!]!',
      'soldOut: Boolean!',
    ]) {
      expect(sdl).toContain(needle);
    }
  });

  it('has the subscriptions of docs/api.md', () => {
    const fields = schema.getSubscriptionType()!.getFields();
    const signature = (name: string) => {
      const f = fields[name]!;
      return `${name}(${f.args.map((a) => `${a.name}: ${String(a.type)}`).join(', ')}): ${String(f.type)}`;
    };
    expect(signature('availabilityChanged')).toBe('availabilityChanged(skus: [String!]!): Availability!');
    expect(signature('orderStatusChanged')).toBe('orderStatusChanged(orderId: ID!, token: String): Order!');
  });

  it('describes every type and every field of the query, mutation and subscription roots', () => {
    for (const root of [schema.getQueryType()!, schema.getMutationType()!, schema.getSubscriptionType()!]) {
      for (const f of Object.values(root.getFields())) expect(f.description, `${root.name}.${f.name}`).toBeTruthy();
    }
  });
});
