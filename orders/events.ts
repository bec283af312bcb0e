// Downstream consumers (docs/events.md): the event feed in commit order, and the admin's webhook endpoints. Delivery
// itself is orders/webhook-delivery.ts.
import type { Db } from '../db/pool.js';
import * as eventsStore from '../db/events-store.js';
import * as store from '../db/webhooks-store.js';
import { EVENT_TYPES, type EventType, type StoredEvent } from '../db/events-store.js';
import type { Delivery, WebhookEndpoint } from '../db/webhooks-store.js';
import type { Caller } from '../common/caller.js';
import { failed, type Result } from './errors.js';
import { isUuid } from './rules.js';
import type { Page } from './pages.js';

export { EVENT_TYPES };
export type { Delivery, EventType, StoredEvent, WebhookEndpoint };

export const MAX_EVENTS_PAGE = 500;
const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

const encode = (position: number) => Buffer.from(`evt:${position}`).toString('base64url');
function decode(cursor: string): number | null {
  const m = /^evt:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? Number(m[1]) : null;
}
function page<T>(rows: T[], first: number, cursorOf: (t: T) => string): Page<T> {
  const edges = rows.slice(0, first).map((node) => ({ node, cursor: cursorOf(node) }));
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}

export type EndpointInput = { url: string; eventTypes: string[]; description?: string | null };
export type EndpointPatch = {
  id: string;
  url?: string | null;
  eventTypes?: string[] | null;
  description?: string | null;
  enabled?: boolean | null;
};

export type EventsDeps = {
  db: Db;
  /** production: endpoint URLs must be https:// */
  production: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_URLS */
  allowPrivateUrls: boolean;
  /** resolves the host and says why it is refused (private address, no such host); absent: no DNS check here */
  checkHost?: (url: URL, allowPrivate: boolean) => Promise<string | null>;
  /** WEBHOOK_SECRET_OVERLAP_HOURS */
  secretOverlapHours: number;
  /** the delivery worker of this process, woken after a redelivery */
  onDeliveryQueued?: () => void;
};

/** A Standard Webhooks secret: `whsec_` + base64 of 24 random bytes. */
function newSecret(): string {
  const random = crypto.getRandomValues(new Uint8Array(24));
  return `whsec_${btoa(String.fromCharCode(...random))}`;
}

async function checkUrl(deps: EventsDeps, raw: string): Promise<Result<string>> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return failed('INVALID_INPUT', 'url is not a URL', ['url']);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return failed('INVALID_INPUT', 'url must be an http(s):// URL', ['url']);
  if (raw.length > 2048) return failed('INVALID_INPUT', 'url must be at most 2048 characters', ['url']);
  if (url.username || url.password) return failed('INVALID_INPUT', 'url must not carry credentials', ['url']);
  if (url.protocol !== 'https:' && deps.production && !deps.allowPrivateUrls)
    return failed('INVALID_INPUT', 'url must be https:// in production', ['url']);
  const problem = await deps.checkHost?.(url, deps.allowPrivateUrls);
  if (problem) return failed('INVALID_INPUT', `url refused: ${problem}`, ['url']);
  return { ok: true, value: url.toString() };
}

function checkTypes(types: readonly string[], field: string[]): Result<EventType[]> {
  if (types.length === 0) return failed('INVALID_INPUT', 'eventTypes must name at least one event type', field);
  const unknown = types.find((t) => !KNOWN_TYPES.has(t));
  if (unknown !== undefined) return failed('INVALID_INPUT', `unknown event type ${unknown}`, field);
  return { ok: true, value: [...new Set(types)] as EventType[] };
}

function checkDescription(d: string | null | undefined): Result<string | null> {
  if (d != null && d.length > 500)
    return failed('INVALID_INPUT', 'description must be at most 500 characters', ['description']);
  return { ok: true, value: d ?? null };
}

const notFound = <T>(field: string): Result<T> => failed<T>('NOT_FOUND', 'no such webhook endpoint', [field]);

export function createEvents(deps: EventsDeps) {
  const { db } = deps;
  return {
    /**
     * events(after, first, types): sequenced events in commit order (admin: all; every other role: its own client's
     * orders' events). The sequencer runs first (a skipped step when another one is running), so a reader without a
     * delivery worker still sees every committed event.
     */
    async feed(
      caller: Caller,
      args: { after?: string | null; first?: number | null; types?: readonly string[] | null },
    ): Promise<Result<Page<StoredEvent>>> {
      const first = args.first ?? 100;
      if (!Number.isInteger(first) || first < 1 || first > MAX_EVENTS_PAGE)
        return failed('INVALID_INPUT', `first must be between 1 and ${MAX_EVENTS_PAGE}`, ['first']);
      const after = args.after ? decode(args.after) : 0;
      if (after === null) return failed('INVALID_INPUT', 'after is not a cursor this API gave out', ['after']);
      let types: EventType[] | null = null;
      if (args.types) {
        const t = checkTypes(args.types, ['types']);
        if (!t.ok) return t;
        types = t.value;
      }
      await eventsStore.sequenceEvents(db);
      const rows = await eventsStore.pageEvents(db, {
        afterPosition: after,
        first,
        clientId: caller.role === 'admin' ? null : caller.clientId,
        types,
      });
      return { ok: true, value: page(rows, first, (e) => encode(e.position)) };
    },

    /** Creates an endpoint; its signing secret is in this answer and nowhere else, ever. */
    async createEndpoint(input: EndpointInput): Promise<Result<{ endpoint: WebhookEndpoint; secret: string }>> {
      const types = checkTypes(input.eventTypes, ['eventTypes']);
      if (!types.ok) return types;
      const description = checkDescription(input.description);
      if (!description.ok) return description;
      const url = await checkUrl(deps, input.url);
      if (!url.ok) return url;
      const secret = newSecret();
      const endpoint = await store.insertEndpoint(db, {
        url: url.value,
        description: description.value,
        eventTypes: types.value,
        secret,
      });
      return { ok: true, value: { endpoint, secret } };
    },

    async updateEndpoint(p: EndpointPatch): Promise<Result<WebhookEndpoint>> {
      if (!isUuid(p.id)) return notFound('id');
      const patch: Parameters<typeof store.updateEndpoint>[2] = {};
      if (p.eventTypes != null) {
        const t = checkTypes(p.eventTypes, ['eventTypes']);
        if (!t.ok) return t;
        patch.eventTypes = t.value;
      }
      if (p.description !== undefined) {
        const d = checkDescription(p.description);
        if (!d.ok) return d;
        patch.description = d.value;
      }
      if (p.url != null) {
        const u = await checkUrl(deps, p.url);
        if (!u.ok) return u;
        patch.url = u.value;
      }
      if (p.enabled != null) patch.enabled = p.enabled;
      const endpoint = await store.updateEndpoint(db, p.id, patch);
      return endpoint ? { ok: true, value: endpoint } : notFound('id');
    },

    async deleteEndpoint(id: string): Promise<Result<{ id: string }>> {
      if (!isUuid(id) || !(await store.deleteEndpoint(db, id))) return notFound('id');
      return { ok: true, value: { id } };
    },

    /** A new secret, answered once; the old one keeps signing beside it for WEBHOOK_SECRET_OVERLAP_HOURS. */
    async rotateSecret(id: string): Promise<Result<{ endpoint: WebhookEndpoint; secret: string }>> {
      if (!isUuid(id)) return notFound('id');
      const secret = newSecret();
      const endpoint = await store.rotateSecret(db, id, secret, deps.secretOverlapHours * 3600);
      return endpoint ? { ok: true, value: { endpoint, secret } } : notFound('id');
    },

    endpoints: () => store.listEndpoints(db),
    endpoint: (id: string) => (isUuid(id) ? store.findEndpoint(db, id) : Promise.resolve(null)),

    /** An endpoint's deliveries, newest first (cursor: the last delivery's id). */
    async deliveries(
      endpointId: string,
      args: { first?: number | null; after?: string | null },
    ): Promise<Result<Page<Delivery>>> {
      const first = args.first ?? 20;
      if (!Number.isInteger(first) || first < 1 || first > 100)
        return failed('INVALID_INPUT', 'first must be between 1 and 100', ['first']);
      const before = args.after ? decode(args.after) : null;
      if (args.after && before === null)
        return failed('INVALID_INPUT', 'after is not a cursor this API gave out', ['after']);
      const rows = await store.pageDeliveries(db, endpointId, first, before);
      return { ok: true, value: page(rows, first, (d) => encode(d.id)) };
    },

    /** Sends one event to one endpoint again, as a delivery of its own (same webhook-id). */
    async redeliver(input: { endpointId: string; eventId: string }): Promise<Result<Delivery>> {
      if (!isUuid(input.endpointId) || !(await store.findEndpoint(db, input.endpointId))) return notFound('endpointId');
      if (!/^evt_[0-9a-f]{32}$/.test(input.eventId)) return failed('NOT_FOUND', 'no such event', ['eventId']);
      const delivery = await store.insertRedelivery(db, input.endpointId, input.eventId);
      if (!delivery) return failed('NOT_FOUND', 'no such event', ['eventId']);
      deps.onDeliveryQueued?.();
      return { ok: true, value: delivery };
    },
  };
}
export type Events = ReturnType<typeof createEvents>;
