// Every SQL statement about drops and their entries (db/functions/110_drops.sql, 111_drop-draw.sql,
// 112_drop-entries.sql). Each answer is parsed at this boundary (db/rows.ts) into a DropRecord or a DropEntryRecord.
import { z } from 'zod';
import type { Db, Queryable } from './pool.js';
import { parseRow, parseRows } from './rows.js';

export const DROP_MODES = ['QUEUE', 'DRAW'] as const;
export const DROP_STATES = ['SCHEDULED', 'OPEN', 'CLOSED', 'ENDED'] as const;
export const ENTRY_STATES = ['WAITING', 'ADMITTED', 'ORDERED', 'LAPSED', 'NOT_DRAWN'] as const;
export type DropMode = (typeof DROP_MODES)[number];

const Time = z.string().transform((s) => new Date(s));
const DropDocument = z.object({
  id: z.string(),
  sku: z.string(),
  mode: z.enum(DROP_MODES),
  state: z.enum(DROP_STATES),
  opensAt: Time,
  closesAt: Time,
  claimSeconds: z.number(),
  maxPerCustomer: z.number(),
  seedCommitment: z.string(),
  seed: z.string().nullable(),
  entriesDigest: z.string().nullable(),
  drawnAt: Time.nullable(),
  shuffledAt: Time.nullable(),
  endedAt: Time.nullable(),
  createdAt: Time,
  counts: z.object({
    entries: z.number(),
    waiting: z.number(),
    admitted: z.number(),
    ordered: z.number(),
    lapsed: z.number(),
    notDrawn: z.number(),
  }),
});
/** A drop as drop_json() builds it: its rule, its published values (the seed once drawn) and its counts. */
export type DropRecord = z.output<typeof DropDocument>;

const EntryDocument = z.object({
  id: z.string(),
  dropId: z.string(),
  customerId: z.string(),
  state: z.enum(ENTRY_STATES),
  place: z.number().nullable(),
  estimatedWaitSeconds: z.number().nullable(),
  admittedUntil: Time.nullable(),
  orderId: z.string().nullable(),
  createdAt: Time,
  updatedAt: Time,
});
/** An entry as drop_entry_json() builds it, for its shopper. */
export type DropEntryRecord = z.output<typeof EntryDocument>;

/** An entry document carried by a drop-entry event (read by the relay), as a DropEntryRecord. */
export const toDropEntry = (doc: unknown): DropEntryRecord => parseRow(EntryDocument, doc, 'a drop_entry event');

const CreateAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['created', 'replayed', 'reused']), drop: DropDocument }),
  z.object({ kind: z.enum(['unknown_sku', 'governed', 'bucketed']) }),
]);
export type CreateDropRow = z.output<typeof CreateAnswer>;

const EnterAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['entered', 'replayed', 'already_entered']), entry: EntryDocument }),
  z.object({ kind: z.enum(['not_found', 'closed', 'not_open', 'address_limit']) }),
]);
export type EnterDropRow = z.output<typeof EnterAnswer>;

export type CreateDropArgs = {
  clientId: string;
  key: string | null;
  requestHash: string;
  sku: string;
  mode: DropMode;
  opensAt: Date;
  closesAt: Date;
  claimSeconds: number;
  maxPerCustomer: number;
};

/** createDrop in one statement: the drop with its secret seed and published commitment, or why not. */
export async function createDrop(db: Db, a: CreateDropArgs): Promise<CreateDropRow> {
  const { rows } = await db.run(
    `SELECT create_drop(p_client_id => $1, p_key => $2, p_request_hash => $3, p_sku => $4, p_mode => $5,
       p_opens_at => $6, p_closes_at => $7, p_claim_seconds => $8, p_max_per_customer => $9) AS r`,
    [a.clientId, a.key, a.requestHash, a.sku, a.mode, a.opensAt, a.closesAt, a.claimSeconds, a.maxPerCustomer],
  );
  return parseRow(CreateAnswer, rows[0]?.r, 'create_drop()');
}

export type EnterDropArgs = {
  dropId: string;
  clientId: string;
  /** the buyer as counted (orders/buyer.ts): a public key's address unless a buyer token vouched */
  customerId: string;
  key: string;
  tokenHash: string;
  /** public keys: the address whose entries per drop are bounded by maxPerAddress */
  address: string | null;
  maxPerAddress: number;
};

/**
 * enterDrop in one statement (enter_drop()): the entry, its replay, or why not. Repeated on 40001/40P01 (db.run):
 * an entry taken while the drop reaches its fair start raises 40001 to be taken again under the right lock.
 */
export async function enterDrop(db: Db, a: EnterDropArgs): Promise<EnterDropRow> {
  const { rows } = await db.run(
    `SELECT enter_drop(p_drop_id => $1, p_client_id => $2, p_customer_id => $3, p_key => $4, p_token_hash => $5,
       p_address => $6, p_max_per_address => $7) AS r`,
    [a.dropId, a.clientId, a.customerId, a.key, a.tokenHash, a.address, a.maxPerAddress],
  );
  return parseRow(EnterAnswer, rows[0]?.r, 'enter_drop()');
}

const DropRow = z.object({ d: DropDocument });
const toDrop = (r: z.output<typeof DropRow>): DropRecord => r.d;

/** One drop, or null. */
export async function findDrop(db: Queryable, id: string): Promise<DropRecord | null> {
  const { rows } = await db.query(`SELECT drop_json(p_drop_id => id) AS d FROM drops WHERE id = $1::uuid`, [id]);
  return rows[0] ? toDrop(parseRow(DropRow, rows[0], 'drop_json()')) : null;
}

/** The newest drops first, at most `first`. */
export async function listDrops(db: Queryable, first: number): Promise<DropRecord[]> {
  const { rows } = await db.query(
    `SELECT drop_json(p_drop_id => id) AS d FROM drops ORDER BY created_at DESC, id LIMIT $1`,
    [first],
  );
  return parseRows(DropRow, rows, 'drop_json()').map(toDrop);
}

const DrawOrderRow = z.object({ ids: z.array(z.string()) });

/** A drawn drop's published entry list in draw order (entry ids only); empty before the draw. */
export async function drawOrder(db: Queryable, dropId: string): Promise<string[]> {
  const { rows } = await db.query(`SELECT drop_draw_order(p_drop_id => $1::uuid) AS ids`, [dropId]);
  return parseRow(DrawOrderRow, rows[0], 'drop_draw_order()').ids;
}

const EntryRow = z.object({ e: EntryDocument, client_id: z.string(), token_hash: z.string() });
const toEntry = (r: z.output<typeof EntryRow>) => ({ entry: r.e, clientId: r.client_id, tokenHash: r.token_hash });

/** One entry with whom it belongs to (its client and its token's hash), or null. */
export async function findEntry(db: Queryable, id: string) {
  const { rows } = await db.query(
    `SELECT drop_entry_json(p_entry_id => id) AS e, client_id, token_hash FROM drop_entries WHERE id = $1::uuid`,
    [id],
  );
  return rows[0] ? toEntry(parseRow(EntryRow, rows[0], 'drop_entry_json()')) : null;
}

const IdRow = z.object({ id: z.string() });
const AdvanceRow = z.object({ n: z.number() });

/**
 * The sweeper's drop step: every drop that has not ended advanced (advance_drop()), each in its own transaction.
 * Returns how many drops it advanced and the admissions it made.
 */
export async function advanceDrops(db: Db): Promise<{ drops: number; admitted: number }> {
  const { rows } = await db.query(`SELECT id FROM drops WHERE ended_at IS NULL ORDER BY id`);
  const ids = parseRows(IdRow, rows, 'drops');
  let admitted = 0;
  for (const { id } of ids) {
    const r = await db.run(`SELECT advance_drop(p_drop_id => $1::uuid) AS n`, [id]);
    admitted += parseRow(AdvanceRow, r.rows[0], 'advance_drop()').n;
  }
  return { drops: ids.length, admitted };
}

const WaitlistDocument = z.object({
  id: z.string(),
  sku: z.string(),
  customerId: z.string(),
  quantity: z.number(),
  state: z.enum(['WAITING', 'OFFERED', 'SKIPPED']),
  place: z.number().nullable(),
  orderId: z.string().nullable(),
  createdAt: Time,
  updatedAt: Time,
});
/** A waitlist entry as waitlist_entry_json() builds it (db/functions/113_waitlist.sql). */
export type WaitlistEntryRecord = z.output<typeof WaitlistDocument>;
const JoinAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['joined', 'replayed']), entry: WaitlistDocument }),
  z.object({ kind: z.enum(['already_entered', 'unknown_sku', 'available', 'drop', 'bucketed']) }),
]);
export type JoinWaitlistRow = z.output<typeof JoinAnswer>;

export type JoinWaitlistArgs = {
  clientId: string;
  customerId: string;
  /** the buyer as counted (orders/buyer.ts) */
  countedCustomer: string;
  sku: string;
  quantity: number;
  key: string;
  tokenHash: string;
  claimSeconds: number;
};

/** joinWaitlist in one statement (join_waitlist()): the entry, its replay, or why not. */
export async function joinWaitlist(db: Db, a: JoinWaitlistArgs): Promise<JoinWaitlistRow> {
  const { rows } = await db.run(
    `SELECT join_waitlist(p_client_id => $1, p_customer_id => $2, p_counted_customer => $3, p_sku => $4,
       p_quantity => $5, p_key => $6, p_token_hash => $7, p_claim_seconds => $8) AS r`,
    [a.clientId, a.customerId, a.countedCustomer, a.sku, a.quantity, a.key, a.tokenHash, a.claimSeconds],
  );
  return parseRow(JoinAnswer, rows[0]?.r, 'join_waitlist()');
}

const WaitlistRow = z.object({ e: WaitlistDocument, client_id: z.string(), token_hash: z.string() });
const toWaitlistEntry = (r: z.output<typeof WaitlistRow>) => ({
  entry: r.e,
  clientId: r.client_id,
  tokenHash: r.token_hash,
});

/** One waitlist entry with whom it belongs to, or null. */
export async function findWaitlistEntry(db: Queryable, id: string) {
  const { rows } = await db.query(
    `SELECT waitlist_entry_json(p_entry_id => id) AS e, client_id, token_hash FROM waitlist_entries WHERE id = $1::uuid`,
    [id],
  );
  return rows[0] ? toWaitlistEntry(parseRow(WaitlistRow, rows[0], 'waitlist_entry_json()')) : null;
}
