// Drops (docs/drops.md): createDrop, enterDrop and reading drops and entries. Every decision (one entry per customer,
// the fair start, admissions, the draw) is a conditional write in PostgreSQL (db/functions/110_drops.sql ff.); this
// module validates input, names the buyer and mints the entry's token.
import type { Db } from '../db/pool.js';
import * as store from '../db/drops-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Caller } from '../common/caller.js';
import { sha256Hex } from '../common/hash.js';
import { randomBase64url } from '../common/random.js';
import { failed, refuse, type DomainError, type Result } from './errors.js';
import { isUuid, MAX_CUSTOMER_ID_LENGTH, MAX_KEY_LENGTH } from './rules.js';
import { buyerOf } from './buyer.js';
import type { BuyerTokens } from './buyer-tokens.js';

export type { DropRecord, DropEntryRecord, DropMode, WaitlistEntryRecord } from '../db/drops-store.js';
export { toDropEntry } from '../db/drops-store.js';

export type DropsDeps = {
  db: Db;
  onOutboxWritten: AfterCommit;
  /** entries per drop from one client address on public keys */
  entriesPerAddress: number;
  buyerTokens?: BuyerTokens;
};
type AnyCaller = Pick<Caller, 'clientId'> & Partial<Caller>;

export type CreateDropInput = {
  sku: string;
  mode: store.DropMode;
  opensAt: Date;
  closesAt: Date;
  claimSeconds: number;
  maxPerCustomer?: number | null;
  idempotencyKey?: string | null;
};

/** What createDrop refuses before anything is written (I15). */
function validateCreateDrop(input: CreateDropInput): DomainError[] {
  const errors: DomainError[] = [];
  if (!(input.closesAt.getTime() > input.opensAt.getTime()))
    errors.push(refuse('INVALID_INPUT', 'closesAt must be after opensAt', ['closesAt']));
  if (!Number.isInteger(input.claimSeconds) || input.claimSeconds < 1 || input.claimSeconds > 86_400)
    errors.push(refuse('INVALID_INPUT', 'claimSeconds must be an integer from 1 to 86400', ['claimSeconds']));
  const max = input.maxPerCustomer ?? 1;
  if (!Number.isInteger(max) || max < 1 || max > 100)
    errors.push(refuse('INVALID_INPUT', 'maxPerCustomer must be an integer from 1 to 100', ['maxPerCustomer']));
  const key = input.idempotencyKey;
  if (key != null && (key.length < 1 || key.length > MAX_KEY_LENGTH))
    errors.push(refuse('INVALID_INPUT', `idempotencyKey must be 1-${MAX_KEY_LENGTH} characters`, ['idempotencyKey']));
  return errors;
}

/**
 * createDrop (admin): a SKU's sale under QUEUE or DRAW from opensAt to closesAt, with its published seed commitment.
 * @example await createDrop(deps, { clientId: 'ops' }, { sku: 'SNKR', mode: 'QUEUE', opensAt, closesAt, claimSeconds: 120 })
 */
export async function createDrop(
  deps: Pick<DropsDeps, 'db'>,
  caller: AnyCaller,
  input: CreateDropInput,
): Promise<Result<store.DropRecord>> {
  const invalid = validateCreateDrop(input);
  if (invalid.length) return { ok: false, errors: invalid };
  const args = {
    clientId: caller.clientId,
    key: input.idempotencyKey ?? null,
    sku: input.sku,
    mode: input.mode,
    opensAt: input.opensAt,
    closesAt: input.closesAt,
    claimSeconds: input.claimSeconds,
    maxPerCustomer: input.maxPerCustomer ?? 1,
  };
  const requestHash = await sha256Hex(JSON.stringify({ ...args, clientId: undefined, key: undefined }));
  const r = await store.createDrop(deps.db, { ...args, requestHash });
  switch (r.kind) {
    case 'created':
    case 'replayed':
      return { ok: true, value: r.drop };
    case 'reused':
      return failed('IDEMPOTENCY_KEY_REUSED', 'this idempotency key was already used for another drop', [
        'idempotencyKey',
      ]);
    case 'unknown_sku':
      return failed('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku);
    case 'governed':
      return failed('DROP_EXISTS', `${input.sku} already has a drop that has not ended`, ['sku'], input.sku);
    case 'bucketed':
      return failed('INVALID_INPUT', `${input.sku} keeps its stock in buckets: a drop needs one stock row`, ['sku']);
  }
}

export type EnterDropInput = { dropId: string; customerId: string; idempotencyKey: string; buyerToken?: string | null };
export type EnterDropResult = Result<store.DropEntryRecord> & { entryToken: string | null };

/** An entry's token: how its shopper reads it and subscribes to it (`de_` + 43 base64url characters). */
const mintEntryToken = () => `de_${randomBase64url(32)}`;

/**
 * enterDrop: the customer's one entry in a drop and its token (handed out once, in the answer that created it). On a
 * public key the entry is the buyer's (orders/buyer.ts: a buyer token's customer, else the client address), so a
 * browser cannot invent customers, and entries per address are bounded.
 * @example await enterDrop(deps, { clientId: 'shop', role: 'storefront' }, { dropId, customerId: 'c1', idempotencyKey: 'k1' })
 */
export async function enterDrop(deps: DropsDeps, caller: AnyCaller, input: EnterDropInput): Promise<EnterDropResult> {
  const no = (errors: DomainError[]): EnterDropResult => ({ ok: false, errors, entryToken: null });
  const invalid: DomainError[] = [];
  if (!isUuid(input.dropId)) invalid.push(refuse('NOT_FOUND', 'no such drop', ['dropId']));
  if (input.customerId.length < 1 || input.customerId.length > MAX_CUSTOMER_ID_LENGTH)
    invalid.push(refuse('INVALID_INPUT', `customerId must be 1-${MAX_CUSTOMER_ID_LENGTH} characters`, ['customerId']));
  if (input.idempotencyKey.length < 1 || input.idempotencyKey.length > MAX_KEY_LENGTH)
    invalid.push(refuse('INVALID_INPUT', `idempotencyKey must be 1-${MAX_KEY_LENGTH} characters`, ['idempotencyKey']));
  const buyer = await buyerOf(caller, input, deps.buyerTokens);
  if (!buyer.ok) invalid.push(...buyer.errors);
  if (invalid.length || !buyer.ok) return no(invalid);
  const token = mintEntryToken();
  const r = await store.enterDrop(deps.db, {
    dropId: input.dropId,
    clientId: caller.clientId,
    customerId: buyer.buyer.countedCustomer ?? input.customerId,
    key: input.idempotencyKey,
    tokenHash: await sha256Hex(token),
    address: caller.role === 'public' ? `ip:${caller.ip ?? 'unknown'}` : null,
    maxPerAddress: deps.entriesPerAddress,
  });
  if (r.kind === 'entered') await deps.onOutboxWritten();
  switch (r.kind) {
    case 'entered':
      return { ok: true, value: r.entry, entryToken: token };
    case 'replayed':
      return { ok: true, value: r.entry, entryToken: null };
    case 'already_entered':
      return no([refuse('ALREADY_ENTERED', 'this customer already has an entry in this drop', ['customerId'])]);
    case 'not_found':
      return no([refuse('NOT_FOUND', 'no such drop', ['dropId'])]);
    case 'closed':
      return no([refuse('DROP_CLOSED', 'this drop takes no more entries', ['dropId'])]);
    case 'not_open':
      return no([refuse('DROP_NOT_OPEN', 'this draw takes entries from its opensAt', ['dropId'])]);
    case 'address_limit':
      return no([refuse('ENTRY_LIMIT', 'too many entries in this drop from this address', ['customerId'])]);
  }
}

/** One drop with its counts and published values, or null (every role: its values are public). */
export async function getDrop(deps: Pick<DropsDeps, 'db'>, id: string) {
  return isUuid(id) ? store.findDrop(deps.db, id) : null;
}

/** The newest drops. */
export const listDrops = (deps: Pick<DropsDeps, 'db'>, first: number) =>
  store.listDrops(deps.db, Math.min(Math.max(first, 1), 100));

/** A drawn drop's entry ids in draw order (empty before the draw): what a buyer checks the draw with. */
export const drawOrder = (deps: Pick<DropsDeps, 'db'>, dropId: string) => store.drawOrder(deps.db, dropId);

/**
 * One entry: a server-side key sees its client's entries; a public key only with the entry's token.
 * @example await getDropEntry({ db }, { clientId: 'web', role: 'public' }, entryId, 'de_...')
 */
export async function getDropEntry(
  deps: Pick<DropsDeps, 'db'>,
  caller: AnyCaller,
  id: string,
  token?: string | null,
): Promise<store.DropEntryRecord | null> {
  if (!isUuid(id)) return null;
  const found = await store.findEntry(deps.db, id);
  if (!found || found.clientId !== caller.clientId) return null;
  if (caller.role === 'public' && (!token || (await sha256Hex(token)) !== found.tokenHash)) return null;
  return found.entry;
}

export type JoinWaitlistInput = {
  sku: string;
  customerId: string;
  quantity?: number | null;
  idempotencyKey: string;
  buyerToken?: string | null;
};
export type JoinWaitlistResult = Result<store.WaitlistEntryRecord> & { entryToken: string | null };

/**
 * joinWaitlist: a place in a sold-out SKU's line. When units come back they are claimed for the head in the same
 * transaction (db/functions/113_waitlist.sql): an order RESERVED for WAITLIST_CLAIM_SECONDS whose token is this
 * entry's token. A SKU that covers the quantity now answers AVAILABLE: the client can just buy.
 * @example await joinWaitlist(deps, { clientId: 'shop', role: 'storefront' }, { sku: 'SNKR', customerId: 'c1', idempotencyKey: 'w1' })
 */
export async function joinWaitlist(
  deps: DropsDeps & { claimSeconds: number },
  caller: AnyCaller,
  input: JoinWaitlistInput,
): Promise<JoinWaitlistResult> {
  const no = (errors: DomainError[]): JoinWaitlistResult => ({ ok: false, errors, entryToken: null });
  const quantity = input.quantity ?? 1;
  const invalid: DomainError[] = [];
  if (!Number.isInteger(quantity) || quantity < 1 || quantity > 100)
    invalid.push(refuse('INVALID_INPUT', 'quantity must be an integer from 1 to 100', ['quantity']));
  if (input.customerId.length < 1 || input.customerId.length > MAX_CUSTOMER_ID_LENGTH)
    invalid.push(refuse('INVALID_INPUT', `customerId must be 1-${MAX_CUSTOMER_ID_LENGTH} characters`, ['customerId']));
  if (input.idempotencyKey.length < 1 || input.idempotencyKey.length > MAX_KEY_LENGTH)
    invalid.push(refuse('INVALID_INPUT', `idempotencyKey must be 1-${MAX_KEY_LENGTH} characters`, ['idempotencyKey']));
  const buyer = await buyerOf(caller, input, deps.buyerTokens);
  if (!buyer.ok) invalid.push(...buyer.errors);
  if (invalid.length || !buyer.ok) return no(invalid);
  // the entry's token is also the token of the order a returned unit is offered in (public keys pay it with it)
  const token = `ot_${randomBase64url(32)}`;
  const r = await store.joinWaitlist(deps.db, {
    clientId: caller.clientId,
    customerId: input.customerId,
    countedCustomer: buyer.buyer.countedCustomer ?? input.customerId,
    sku: input.sku,
    quantity,
    key: input.idempotencyKey,
    tokenHash: await sha256Hex(token),
    claimSeconds: deps.claimSeconds,
  });
  if (r.kind === 'joined') await deps.onOutboxWritten();
  switch (r.kind) {
    case 'joined':
      return { ok: true, value: r.entry, entryToken: token };
    case 'replayed':
      return { ok: true, value: r.entry, entryToken: null };
    case 'already_entered':
      return no([refuse('ALREADY_ENTERED', 'this customer is already waiting for this SKU', ['customerId'])]);
    case 'unknown_sku':
      return no([refuse('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku)]);
    case 'available':
      return no([refuse('AVAILABLE', `${input.sku} is not sold out: place an order`, ['sku'], input.sku)]);
    case 'drop':
      return no([refuse('DROP_EXISTS', `${input.sku} is sold through a drop: enter it instead`, ['sku'], input.sku)]);
    case 'bucketed':
      return no([refuse('INVALID_INPUT', `${input.sku} keeps its stock in buckets: no waitlist`, ['sku'])]);
  }
}

/** One waitlist entry: a server-side key sees its client's; a public key only with the entry's token. */
export async function getWaitlistEntry(
  deps: Pick<DropsDeps, 'db'>,
  caller: AnyCaller,
  id: string,
  token?: string | null,
): Promise<store.WaitlistEntryRecord | null> {
  if (!isUuid(id)) return null;
  const found = await store.findWaitlistEntry(deps.db, id);
  if (!found || found.clientId !== caller.clientId) return null;
  if (caller.role === 'public' && (!token || (await sha256Hex(token)) !== found.tokenHash)) return null;
  return found.entry;
}
