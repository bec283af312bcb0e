// Drops (docs/drops.md): the Drop and DropEntry types, createDrop, enterDrop, and the root fields that read them.
import { builder } from './builder.js';
import { UserError } from './common.js';
import type { DropEntryRecord, DropRecord } from '../orders/orders.js';
import * as r from '../resolvers/drops.js';

const DropMode = builder.enumType('DropMode', {
  description: 'The rule a drop sells its SKU under.',
  values: {
    QUEUE: { description: 'A waiting room: entries before opensAt get random places at opensAt, later ones queue.' },
    DRAW: { description: 'Entries from opensAt to closesAt, then a published, verifiable pick.' },
  } as const,
});
const DropState = builder.enumType('DropState', {
  description: 'Where a drop is in its life.',
  values: {
    SCHEDULED: { description: 'Before opensAt (QUEUE takes entries already).' },
    OPEN: { description: 'Between opensAt and closesAt.' },
    CLOSED: { description: 'Past closesAt; admitted entries may still order.' },
    ENDED: { description: 'The drop no longer governs its SKU: it is on plain sale again.' },
  } as const,
});
const DropEntryState = builder.enumType('DropEntryState', {
  description: "Where an entry is in the drop's line.",
  values: {
    WAITING: { description: 'In line (or, for DRAW, not reached yet in draw order).' },
    ADMITTED: { description: 'May place one order for the SKU until admittedUntil.' },
    ORDERED: { description: 'Used: placed its order (see orderId).' },
    LAPSED: { description: 'Admitted but did not order in time; the next entry was admitted.' },
    NOT_DRAWN: { description: 'The drop ended before this entry was reached.' },
  } as const,
});

const DropCounts = builder.objectRef<DropRecord['counts']>('DropCounts').implement({
  description: "How many of a drop's entries are in each state.",
  fields: (t) => ({
    entries: t.exposeInt('entries'),
    waiting: t.exposeInt('waiting'),
    admitted: t.exposeInt('admitted', { description: 'Admissions outstanding (never more than units that can sell).' }),
    ordered: t.exposeInt('ordered'),
    lapsed: t.exposeInt('lapsed'),
    notDrawn: t.exposeInt('notDrawn'),
  }),
});

const Drop = builder.objectRef<DropRecord>('Drop').implement({
  description: "A SKU's sale under a rule (docs/drops.md).",
  fields: (t) => ({
    id: t.exposeID('id'),
    sku: t.exposeString('sku'),
    mode: t.field({ type: DropMode, resolve: (d) => d.mode }),
    state: t.field({ type: DropState, resolve: (d) => d.state }),
    opensAt: t.field({ type: 'DateTime', resolve: (d) => d.opensAt }),
    closesAt: t.field({ type: 'DateTime', resolve: (d) => d.closesAt }),
    claimSeconds: t.exposeInt('claimSeconds', { description: 'How long an admitted entry may take to order.' }),
    maxPerCustomer: t.exposeInt('maxPerCustomer', { description: 'Units one admitted entry may order.' }),
    counts: t.field({ type: DropCounts, resolve: (d) => d.counts }),
    seedCommitment: t.exposeString('seedCommitment', {
      description: 'Hex SHA-256 of the secret draw seed, published at creation.',
    }),
    seed: t.exposeString('seed', { nullable: true, description: 'The draw seed (hex), revealed at the draw.' }),
    entriesDigest: t.exposeString('entriesDigest', {
      nullable: true,
      description: 'Hex SHA-256 of the sorted entry ids joined by newlines, published at the draw.',
    }),
    drawnAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.drawnAt }),
    drawOrder: t.stringList({
      description: 'DRAW, once drawn: every entry id in draw order (winners first); empty before. docs/drops.md.',
      resolve: (d, _args, ctx) => (d.drawnAt ? r.drawOrder(ctx, d.id) : []),
    }),
    endedAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.endedAt }),
  }),
});

export const DropEntry = builder.objectRef<DropEntryRecord>('DropEntry').implement({
  description: "A customer's one entry in a drop.",
  fields: (t) => ({
    id: t.exposeID('id'),
    dropId: t.exposeID('dropId'),
    customerId: t.exposeString('customerId', {
      description: 'The buyer the entry counts (a public key without a buyer token: its address).',
    }),
    state: t.field({ type: DropEntryState, resolve: (e) => e.state }),
    place: t.exposeInt('place', {
      nullable: true,
      description: 'Entries still waiting ahead of this one, plus one; null before the shuffle (QUEUE) or draw.',
    }),
    estimatedWaitSeconds: t.exposeInt('estimatedWaitSeconds', {
      nullable: true,
      description: 'A rough estimate, not a promise; null while no place or no unit is in sight.',
    }),
    admittedUntil: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.admittedUntil }),
    orderId: t.exposeID('orderId', { nullable: true }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (e) => e.updatedAt }),
  }),
});

const CreateDropInput = builder.inputType('CreateDropInput', {
  description: "A SKU's sale under a drop's rule.",
  fields: (t) => ({
    sku: t.string({ required: true }),
    mode: t.field({ type: DropMode, required: true }),
    opensAt: t.field({ type: 'DateTime', required: true }),
    closesAt: t.field({ type: 'DateTime', required: true, description: 'After opensAt.' }),
    claimSeconds: t.int({ required: true, description: 'How long an admission lasts, 1 to 86400.' }),
    maxPerCustomer: t.int({ required: false, description: 'Units per admitted entry, 1 to 100 (default 1).' }),
    idempotencyKey: t.string({ required: false, description: 'The same key replays the same drop.' }),
  }),
});
const CreateDropPayload = builder.objectRef<Awaited<ReturnType<typeof r.createDrop>>>('CreateDropPayload').implement({
  fields: (t) => ({
    drop: t.field({ type: Drop, nullable: true, resolve: (p) => p.drop }),
    userErrors: t.field({
      type: [UserError],
      description: 'UNKNOWN_SKU, INVALID_INPUT (closesAt not after opensAt, ...), DROP_EXISTS, IDEMPOTENCY_KEY_REUSED.',
      resolve: (p) => p.userErrors,
    }),
  }),
});
builder.mutationField('createDrop', (t) =>
  t.field({
    type: CreateDropPayload,
    description: 'Admin: sell a SKU through a drop; from now on placeOrder for it needs an admitted entry.',
    args: { input: t.arg({ type: CreateDropInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.createDrop(ctx, input),
  }),
);

const EnterDropInput = builder.inputType('EnterDropInput', {
  description: "A customer's entry in a drop.",
  fields: (t) => ({
    dropId: t.id({ required: true }),
    customerId: t.string({ required: true }),
    idempotencyKey: t.string({ required: true, description: 'The same key replays the same entry.' }),
    buyerToken: t.string({ required: false, description: "Public keys: the shop's buyer token for customerId." }),
  }),
});
const EnterDropPayload = builder.objectRef<Awaited<ReturnType<typeof r.enterDrop>>>('EnterDropPayload').implement({
  fields: (t) => ({
    entry: t.field({ type: DropEntry, nullable: true, resolve: (p) => p.entry }),
    entryToken: t.exposeString('entryToken', {
      nullable: true,
      description: 'The entry token (dropEntry, dropEntryChanged), only in the answer that created the entry.',
    }),
    userErrors: t.field({
      type: [UserError],
      description: 'NOT_FOUND, DROP_CLOSED, DROP_NOT_OPEN, ALREADY_ENTERED, ENTRY_LIMIT, INVALID_INPUT.',
      resolve: (p) => p.userErrors,
    }),
  }),
});
builder.mutationField('enterDrop', (t) =>
  t.field({
    type: EnterDropPayload,
    description: "A customer's one entry in a drop: its place, estimated wait and, once admitted, its order window.",
    args: { input: t.arg({ type: EnterDropInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.enterDrop(ctx, input),
  }),
);

builder.queryField('drop', (t) =>
  t.field({
    type: Drop,
    nullable: true,
    description: 'One drop with its counts and published values; null if there is none with this id.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => r.drop(ctx, args.id),
  }),
);
builder.queryField('drops', (t) =>
  t.field({
    type: [Drop],
    description: 'The newest drops first.',
    args: { first: t.arg.int({ required: false, defaultValue: 20, description: '1 to 100.' }) },
    resolve: (_root, args, ctx) => r.drops(ctx, args.first ?? 20),
  }),
);
builder.queryField('dropEntry', (t) =>
  t.field({
    type: DropEntry,
    nullable: true,
    description:
      "One of your client's entries; a public key must send the entry's token (EnterDropPayload.entryToken).",
    args: { id: t.arg.id({ required: true }), token: t.arg.string({ required: false }) },
    resolve: (_root, args, ctx) => r.dropEntry(ctx, args.id, args.token),
  }),
);
