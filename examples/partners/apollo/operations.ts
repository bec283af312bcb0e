// The partner app's own operation: the shipped list has no product name or price in one read, so it brings its own.
import { gql } from '@apollo/client';

export const PARTNER_PRODUCT = gql`
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
`;
