// Buyer tokens: the shop's backend vouches for the customer behind a public key (orders/buyer-tokens.ts).
import { builder } from './builder.js';
import { UserError } from './common.js';
import * as r from '../resolvers/orders.js';

const CreateBuyerTokenInput = builder.inputType('CreateBuyerTokenInput', {
  description: 'A customer of your API client, vouched for by your backend.',
  fields: (t) => ({
    customerId: t.id({
      required: true,
      description: 'The customer the token vouches for (1-255 characters): the customerId the browser must place with.',
    }),
    ttlSeconds: t.int({
      required: false,
      description: 'How long the token is valid: 1 to 86400 seconds (default 3600).',
    }),
  }),
});

type Payload = Awaited<ReturnType<typeof r.createBuyerToken>>;
const CreateBuyerTokenPayload = builder.objectRef<Payload>('CreateBuyerTokenPayload').implement({
  description: 'A buyer token for one customer, or why not (userErrors).',
  fields: (t) => ({
    token: t.string({
      nullable: true,
      description:
        'Hand it to the browser, which sends it as PlaceOrderInput.buyerToken with the public key; null when refused.',
      resolve: (p) => p.token,
    }),
    expiresAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the token stops being accepted.',
      resolve: (p) => p.expiresAt,
    }),
    userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
  }),
});

builder.mutationFields((t) => ({
  createBuyerToken: t.field({
    type: CreateBuyerTokenPayload,
    description:
      "Storefront (or admin): a short-lived signed token for one of your customers. With it, a public key's purchase " +
      "and hold limits count that customer, from any address; without one they count the client's address, whatever " +
      'customerId the page sends. Valid only with keys of the same API client; nothing is stored.',
    args: { input: t.arg({ type: CreateBuyerTokenInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.createBuyerToken(ctx, input),
  }),
}));
