// The partner app's operation, written with the client preset's `graphql()`: codegen types it and hashes it.
import { graphql } from './gql/index.js';

export const PartnerProductDocument = graphql(`
  query PartnerProduct($sku: String!) {
    product(sku: $sku) {
      sku
      name
      price {
        amount
        currencyCode
      }
      availability {
        available
        soldOut
      }
    }
  }
`);
