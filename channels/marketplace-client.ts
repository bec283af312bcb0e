// Talking to marketplaces: set a listed quantity, ask for an oversold order's cancellation. Called by the pusher
// (orders/channel-pusher.ts) outside any database transaction. Two protocols:
//   SANDBOX  PUT <endpoint>/listings/<sku> {"quantity": n, "version": v} with an Idempotency-Key; 409: a newer version
//            is there already; 429 + Retry-After: slow down. POST <endpoint>/orders/<id>/cancel with an Idempotency-Key.
//   SHOPIFY  the Admin GraphQL API at <endpoint>: inventorySetQuantities with changeFromQuantity (compare-and-set) and
//            @idempotent(key:); CHANGE_FROM_QUANTITY_STALE: read the quantity Shopify has and set again from it.
//            orderCancel for an oversold order.

export type PushJob = { sku: string; quantity: number; version: number; previous: number | null };
export type SendResult =
  | { kind: 'ok' }
  /** the marketplace already has a newer version: nothing to do */
  | { kind: 'stale' }
  | { kind: 'rate_limited'; retryAfterMs: number }
  | { kind: 'failed'; error: string };
export type MarketplaceClient = {
  push(job: PushJob, idempotencyKey: string): Promise<SendResult>;
  cancel(externalOrderId: string, idempotencyKey: string): Promise<SendResult>;
};
export type ChannelTarget = { id: string; kind: 'SANDBOX' | 'SHOPIFY'; endpoint: string };

/** Retry-After as milliseconds: delta-seconds or an HTTP date; 1 s when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  if (header && /^\d+(\.\d+)?$/.test(header.trim())) return Math.round(Number(header) * 1000);
  const at = header ? Date.parse(header) : NaN;
  return Number.isFinite(at) ? Math.max(0, at - now) : 1000;
}

async function call(url: string, init: RequestInit, timeoutMs: number): Promise<Response | { error: string }> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    return { error: String((err as Error)?.message ?? err) };
  }
}

function sandboxClient(c: ChannelTarget, timeoutMs: number): MarketplaceClient {
  const answer = async (res: Response | { error: string }): Promise<SendResult> => {
    if ('error' in res) return { kind: 'failed', error: res.error };
    await res.body?.cancel().catch(() => {});
    if (res.ok) return { kind: 'ok' };
    if (res.status === 409) return { kind: 'stale' };
    if (res.status === 429) return { kind: 'rate_limited', retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
    return { kind: 'failed', error: `HTTP ${res.status}` };
  };
  return {
    push: async (j, key) =>
      answer(
        await call(
          `${c.endpoint}/listings/${encodeURIComponent(j.sku)}`,
          {
            method: 'PUT',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ quantity: j.quantity, version: j.version }),
          },
          timeoutMs,
        ),
      ),
    cancel: async (orderId, key) => {
      const r = await call(
        `${c.endpoint}/orders/${encodeURIComponent(orderId)}/cancel`,
        { method: 'POST', headers: { 'idempotency-key': key } },
        timeoutMs,
      );
      if (!('error' in r) && (r.status === 404 || r.status === 409)) return { kind: 'ok' }; // unknown or already cancelled: nothing left to ask
      return answer(r);
    },
  };
}

const SET_QUANTITIES = `mutation SetAvailable($input: InventorySetQuantitiesInput!, $key: String!) {
  inventorySetQuantities(input: $input) @idempotent(key: $key) {
    inventoryAdjustmentGroup { id }
    userErrors { code field message }
  }
}`;
const ITEM_BY_SKU = `query ItemBySku($query: String!) {
  locations(first: 1) { nodes { id } }
  inventoryItems(first: 1, query: $query) { nodes { id inventoryLevels(first: 1) { nodes { location { id } quantities(names: ["available"]) { name quantity } } } } }
}`;
const CANCEL = `mutation Cancel($orderId: ID!, $key: String!) {
  orderCancel(orderId: $orderId, reason: INVENTORY, refund: true, restock: false, notifyCustomer: true) @idempotent(key: $key) {
    job { id }
    orderCancelUserErrors { code field message }
  }
}`;

/**
 * Shopify's Admin GraphQL API (endpoint: https://<shop>.myshopify.com/admin/api/<version>/graphql.json). The
 * inventory item of a SKU and its location are looked up once and kept; the quantity last set is the compare-and-set
 * base, and a CHANGE_FROM_QUANTITY_STALE answer reads what Shopify has and sets again from that.
 */
function shopifyClient(c: ChannelTarget, timeoutMs: number, accessToken: string | undefined): MarketplaceClient {
  const items = new Map<string, { itemId: string; locationId: string; available: number | null }>();
  async function gql(
    query: string,
    variables: Record<string, unknown>,
  ): Promise<{ data?: any; throttledMs?: number; error?: string }> {
    const res = await call(
      c.endpoint,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(accessToken ? { 'x-shopify-access-token': accessToken } : {}),
        },
        body: JSON.stringify({ query, variables }),
      },
      timeoutMs,
    );
    if ('error' in res) return { error: res.error };
    if (res.status === 429) return { throttledMs: retryAfterMs(res.headers.get('retry-after')) };
    if (!res.ok) return { error: `HTTP ${res.status}` };
    const body = (await res.json().catch(() => ({}))) as any;
    if (body.errors?.some((e: any) => e?.extensions?.code === 'THROTTLED')) return { throttledMs: 1000 };
    if (body.errors?.length) return { error: String(body.errors[0]?.message ?? 'GraphQL error') };
    return { data: body.data };
  }
  type Item = { itemId: string; locationId: string; available: number | null };
  async function item(sku: string, fresh = false): Promise<Item | { throttledMs?: number; error?: string }> {
    const known = items.get(sku);
    if (known && !fresh) return known;
    const r = await gql(ITEM_BY_SKU, { query: `sku:${JSON.stringify(sku)}` });
    if (!r.data) return { throttledMs: r.throttledMs, error: r.error ?? 'no data' };
    const node = r.data.inventoryItems?.nodes?.[0];
    const level = node?.inventoryLevels?.nodes?.[0];
    const locationId = level?.location?.id ?? r.data.locations?.nodes?.[0]?.id;
    if (!node || !locationId) return { error: `no Shopify inventory item with SKU ${sku}` };
    const available = level?.quantities?.find((q: any) => q.name === 'available')?.quantity ?? null;
    const it = {
      itemId: node.id as string,
      locationId: locationId as string,
      available: typeof available === 'number' ? available : null,
    };
    items.set(sku, it);
    return it;
  }
  return {
    async push(j, key) {
      for (let round = 0; round < 2; round++) {
        const found = await item(j.sku, round > 0);
        if (!('itemId' in found)) {
          return found.throttledMs !== undefined
            ? { kind: 'rate_limited', retryAfterMs: found.throttledMs }
            : { kind: 'failed', error: found.error ?? 'lookup failed' };
        }
        const it = found;
        const r = await gql(SET_QUANTITIES, {
          key: round === 0 ? key : `${key}:${it.available}`, // a new body needs a new key (IDEMPOTENCY_KEY_PARAMETER_MISMATCH)
          input: {
            name: 'available',
            reason: 'correction',
            referenceDocumentUri: `lastunit://listings/${encodeURIComponent(j.sku)}?version=${j.version}`,
            quantities: [
              {
                inventoryItemId: it.itemId,
                locationId: it.locationId,
                quantity: j.quantity,
                changeFromQuantity: it.available,
              },
            ],
          },
        });
        if (r.throttledMs !== undefined) return { kind: 'rate_limited', retryAfterMs: r.throttledMs };
        if (r.error) return { kind: 'failed', error: r.error };
        const errors = (r.data?.inventorySetQuantities?.userErrors ?? []) as { code: string; message: string }[];
        if (errors.length === 0) {
          it.available = j.quantity;
          return { kind: 'ok' };
        }
        if (errors[0]!.code === 'CHANGE_FROM_QUANTITY_STALE') continue; // Shopify sold or changed some: read and set again
        if (errors[0]!.code === 'IDEMPOTENCY_CONCURRENT_REQUEST') return { kind: 'failed', error: errors[0]!.code };
        return { kind: 'failed', error: `${errors[0]!.code}: ${errors[0]!.message}` };
      }
      return { kind: 'failed', error: 'CHANGE_FROM_QUANTITY_STALE twice' };
    },
    async cancel(orderId, key) {
      const r = await gql(CANCEL, { orderId, key });
      if (r.throttledMs !== undefined) return { kind: 'rate_limited', retryAfterMs: r.throttledMs };
      if (r.error) return { kind: 'failed', error: r.error };
      const errors = r.data?.orderCancel?.orderCancelUserErrors ?? [];
      return errors.length === 0 || errors[0].code === 'ORDER_ALREADY_CANCELLED' || errors[0].code === 'NOT_FOUND'
        ? { kind: 'ok' }
        : { kind: 'failed', error: `${errors[0].code}: ${errors[0].message}` };
    },
  };
}

/**
 * The client for a channel's kind. `shopifyAccessToken`: the Admin API token SHOPIFY channels are called with (absent:
 * none is sent, and Shopify refuses the calls).
 * @example const client = marketplaceClient(channel, { timeoutMs: 5000 }); await client.push({ sku, quantity, version, previous }, key)
 */
export function marketplaceClient(
  c: ChannelTarget,
  opts: { timeoutMs: number; shopifyAccessToken?: string },
): MarketplaceClient {
  return c.kind === 'SHOPIFY'
    ? shopifyClient(c, opts.timeoutMs, opts.shopifyAccessToken)
    : sandboxClient(c, opts.timeoutMs);
}
