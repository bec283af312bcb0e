// Waitlists (docs/drops.md, "Waitlist"): the WaitlistEntry type, joinWaitlist and waitlistEntry.
import { builder } from './builder.js';
import { UserError } from './common.js';
import type { WaitlistEntryRecord } from '../orders/orders.js';
import * as r from '../resolvers/drops.js';

const WaitlistEntryState = builder.enumType('WaitlistEntryState', {
  description: 'Where a waitlist entry is: in line, or handed a unit.',
  values: {
    WAITING: { description: 'In line for the next unit that comes back.' },
    OFFERED: { description: 'A returned unit is held for it in orderId (RESERVED until its expiresAt): pay it.' },
    SKIPPED: { description: 'A unit came back but the purchase limit refused this customer; the next was served.' },
  } as const,
});

const WaitlistEntry = builder.objectRef<WaitlistEntryRecord>('WaitlistEntry').implement({
  description: "A customer's place in a sold-out SKU's line.",
  fields: (t) => ({
    id: t.exposeID('id'),
    sku: t.exposeString('sku'),
    customerId: t.exposeString('customerId'),
    quantity: t.exposeInt('quantity'),
    state: t.field({ type: WaitlistEntryState, resolve: (e) => e.state }),
    place: t.exposeInt('place', { nullable: true, description: 'Entries waiting ahead of this one, plus one.' }),
    orderId: t.exposeID('orderId', {
      nullable: true,
      description: "OFFERED: the order holding the unit (a public key reaches it with this entry's token).",
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (e) => e.updatedAt }),
  }),
});

const JoinWaitlistInput = builder.inputType('JoinWaitlistInput', {
  description: "A customer's place in a sold-out SKU's line.",
  fields: (t) => ({
    sku: t.string({ required: true }),
    customerId: t.string({ required: true }),
    quantity: t.int({ required: false, description: '1 to 100 (default 1).' }),
    idempotencyKey: t.string({ required: true, description: 'The same key replays the same entry.' }),
    buyerToken: t.string({ required: false, description: "Public keys: the shop's buyer token for customerId." }),
  }),
});
const JoinWaitlistPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.joinWaitlist>>>('JoinWaitlistPayload')
  .implement({
    fields: (t) => ({
      entry: t.field({ type: WaitlistEntry, nullable: true, resolve: (p) => p.entry }),
      entryToken: t.exposeString('entryToken', {
        nullable: true,
        description: "The entry's token, also the token of the order it is offered (only in the answer that joined).",
      }),
      userErrors: t.field({
        type: [UserError],
        description: 'AVAILABLE (not sold out: just buy), UNKNOWN_SKU, ALREADY_ENTERED, DROP_EXISTS, INVALID_INPUT.',
        resolve: (p) => p.userErrors,
      }),
    }),
  });
builder.mutationField('joinWaitlist', (t) =>
  t.field({
    type: JoinWaitlistPayload,
    description: 'Wait for a sold-out SKU: the next unit that comes back is held for the head of the line.',
    args: { input: t.arg({ type: JoinWaitlistInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.joinWaitlist(ctx, input),
  }),
);
builder.queryField('waitlistEntry', (t) =>
  t.field({
    type: WaitlistEntry,
    nullable: true,
    description: "One of your client's waitlist entries; a public key must send the entry's token.",
    args: { id: t.arg.id({ required: true }), token: t.arg.string({ required: false }) },
    resolve: (_root, args, ctx) => r.waitlistEntry(ctx, args.id, args.token),
  }),
);
