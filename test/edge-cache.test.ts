import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { edgeCache } from '../edge/edge-cache.js';

/** A Cache API stand-in keyed by URL (workerd's own is exercised in edge-worker.test.ts). */
function memoryCache() {
  const m = new Map<string, Response>();
  return {
    keys: () => [...m.keys()],
    cache: {
      match: async (req: Request) => m.get(req.url)?.clone(),
      put: async (req: Request, res: Response) => void m.set(req.url, res),
    } as unknown as Cache,
  };
}

function setup(opts: { answer?: (req: Request) => unknown } = {}) {
  let t = 1_000_000;
  let origin = 0;
  const mem = memoryCache();
  const pending: Promise<unknown>[] = [];
  const answer =
    opts.answer ?? ((req: Request) => ({ data: { v: new URL(req.url).searchParams.get('variables'), n: origin } }));
  const app = new Hono();
  app.use(
    '/graphql',
    edgeCache({
      ttlSeconds: 2,
      staleWhileRevalidateSeconds: 10,
      cache: () => mem.cache,
      isCacheable: (id) => id === 'pub',
      origin: async (req) => Response.json(answer(req)),
      now: () => t,
    }),
  );
  app.all('/graphql', (c) => {
    origin++;
    return c.json(answer(c.req.raw) as object);
  });
  const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException: () => {}, props: {} };
  const get = async (qs: Record<string, string>, init: RequestInit = {}) => {
    const res = await app.fetch(new Request(`http://x/graphql?${new URLSearchParams(qs)}`, init), {}, ctx);
    await Promise.all(pending.splice(0));
    return { state: res.headers.get('x-lastunit-cache'), body: (await res.json()) as any };
  };
  return { get, mem, tick: (ms: number) => (t += ms), origins: () => origin };
}

describe('edgeCache', () => {
  it('keys by id and canonical variables (any key order, any nesting), never by API key', async () => {
    const s = setup();
    expect(
      (
        await s.get(
          { documentId: 'pub', variables: '{"a":1,"b":{"x":1,"y":2}}' },
          { headers: { authorization: 'Bearer one' } },
        )
      ).state,
    ).toBe('MISS');
    expect(
      (
        await s.get(
          { documentId: 'pub', variables: '{"b":{"y":2,"x":1},"a":1}' },
          { headers: { authorization: 'Bearer two' } },
        )
      ).state,
    ).toBe('HIT');
    expect((await s.get({ documentId: 'pub', variables: '{"a":1,"b":{"x":1,"y":3}}' })).state).toBe('MISS');
    expect(s.origins()).toBe(2);
    expect(s.mem.keys().every((k) => !k.includes('Bearer'))).toBe(true);
  });

  it('is HIT within the TTL, STALE (and refreshed in the background) within SWR, MISS after both', async () => {
    const s = setup();
    await s.get({ documentId: 'pub' });
    s.tick(2_500);
    expect((await s.get({ documentId: 'pub' })).state).toBe('STALE');
    expect((await s.get({ documentId: 'pub' })).state).toBe('HIT'); // the refresh stored a fresh entry
    s.tick(13_000);
    expect((await s.get({ documentId: 'pub' })).state).toBe('MISS');
  });

  it('leaves alone POST, non-cacheable ids, requests carrying a document, and answers with errors', async () => {
    const s = setup();
    expect((await s.get({ documentId: 'private' })).state).toBeNull();
    expect((await s.get({ documentId: 'pub', query: '{ order(id: "1") { id } }' })).state).toBeNull();
    expect((await s.get({ documentId: 'pub' }, { method: 'POST', body: '{}' })).state).toBeNull();
    expect(s.mem.keys()).toEqual([]);
    const e = setup({ answer: () => ({ errors: [{ message: 'boom' }] }) });
    await e.get({ documentId: 'pub' });
    expect((await e.get({ documentId: 'pub' })).state).toBe('MISS');
    expect(e.mem.keys()).toEqual([]);
  });
});
