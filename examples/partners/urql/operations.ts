// The partner app's own operation, as an urql document.
import { gql } from '@urql/core';

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
