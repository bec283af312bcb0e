// What the shop's console reads and its one action of its own (docs/console.md). Every other action of the console
// (restock, setStock, releaseReservation, captureOrder, cancelOrder) is the API's existing mutation, with its guards.
import * as store from '../db/console-store.js';
import type { IncidentView, ListingHealth, OpenOrder, StockLevel } from '../db/console-store.js';
import type { Db } from '../db/pool.js';
import type { SaleActivity, SaleSecond } from '../common/sale-activity.js';
import { failed, type Result } from './errors.js';

export type { IncidentView, ListingHealth, OpenOrder, SaleSecond, StockLevel };

export const MAX_CONSOLE_ROWS = 500;
const bounded = (n: number | null | undefined, def: number) => Math.max(1, Math.min(n ?? def, MAX_CONSOLE_ROWS));

export type ShopConsoleDeps = {
  db: Db;
  /** this process's per-second series (common/sale-activity.ts); absent (Workers): an empty series */
  activity?: SaleActivity;
  /** told after a push retry was recorded (the Node host wakes its channel pusher) */
  onPushRetried?: () => void;
};

/** Stock of up to `first` SKUs (or of `skus`), held / awaiting payment / sold split. */
export const stockLevels = (deps: ShopConsoleDeps, first?: number | null, skus?: string[] | null) =>
  store.stockLevels(deps.db, bounded(first, 200), skus);

/** Holds (RESERVED) and orders waiting on the processor (AWAITING_PAYMENT), the soonest to end first. */
export async function openOrders(deps: ShopConsoleDeps, first?: number | null) {
  const n = bounded(first, 100);
  const [holds, awaitingPayment, reconcilerLastRunAt] = await Promise.all([
    store.openOrders(deps.db, 'RESERVED', n),
    store.openOrders(deps.db, 'AWAITING_PAYMENT', n),
    deps.activity?.reconcilerLastRunAt() ?? null,
  ]);
  return { holds, awaitingPayment, reconcilerLastRunAt };
}

/** Every marketplace listing (pending and failing first) and the newest oversell incidents. */
export async function channelHealth(deps: ShopConsoleDeps, first?: number | null) {
  const n = bounded(first, 200);
  const [listings, incidents] = await Promise.all([store.listingHealth(deps.db, n), store.incidents(deps.db, 50)]);
  return { listings, incidents };
}

/** The newest `seconds` of this process's sale series (at most 900). */
export const saleActivity = (deps: ShopConsoleDeps, seconds?: number | null): SaleSecond[] =>
  deps.activity?.last(Math.max(1, Math.min(seconds ?? 900, 900))) ?? [];

/**
 * Sends a pending listing at once: its backoff forgotten, the pusher woken. A listing already acknowledged at its
 * newest quantity has nothing to send (INVALID_INPUT); an unknown channel or SKU is NOT_FOUND. Nothing is written then.
 */
export async function retryChannelPush(
  deps: ShopConsoleDeps,
  input: { channelId: string; sku: string },
): Promise<Result<ListingHealth>> {
  const kind = await store.retryChannelPush(deps.db, input.channelId, input.sku);
  if (kind === 'not_found')
    return failed('NOT_FOUND', `channel ${input.channelId} lists no SKU ${input.sku}`, ['channelId'], input.sku);
  if (kind === 'up_to_date')
    return failed(
      'INVALID_INPUT',
      'nothing to retry: the marketplace already acknowledged the newest quantity',
      ['sku'],
      input.sku,
    );
  deps.onPushRetried?.();
  const listing = await store.listingOf(deps.db, input.channelId, input.sku);
  if (!listing) return failed('NOT_FOUND', `channel ${input.channelId} lists no SKU ${input.sku}`, ['channelId']);
  return { ok: true, value: listing };
}

/** The console's reads and action bound to one database, as the resolvers receive them. */
export function createShopConsole(deps: ShopConsoleDeps) {
  return {
    stockLevels: (first?: number | null, skus?: string[] | null) => stockLevels(deps, first, skus),
    openOrders: (first?: number | null) => openOrders(deps, first),
    channelHealth: (first?: number | null) => channelHealth(deps, first),
    saleActivity: (seconds?: number | null) => saleActivity(deps, seconds),
    retryChannelPush: (input: { channelId: string; sku: string }) => retryChannelPush(deps, input),
  };
}
export type ShopConsole = ReturnType<typeof createShopConsole>;
