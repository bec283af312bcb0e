// No socket reset under a burst of keep-alive requests (node/listen.ts). Node's fetch keeps an idle connection for the
// server's Keep-Alive hint minus 2 s and drops it only when its own timer runs; a client whose event loop is busy
// between bursts (here: 3 s of checking results) sends its next burst on connections the server may have closed
// meanwhile. With Node's default 5 s server timeout that burst failed with `other side closed` / ECONNRESET. Through
// the real Node host over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';

const KEY = 'keep_alive_storefront_key_0123';
const tdb = await createTestDatabase();
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS: `storefront:shop:${KEY}` } });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

/** `n` concurrent POSTs from this process's fetch (keep-alive); the failures by cause. */
async function burst(n: number) {
  const body = JSON.stringify({ query: '{ product(sku: "KA-NONE") { sku } }' });
  const answers = await Promise.allSettled(
    Array.from({ length: n }, () =>
      fetch(srv.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body,
      }).then(async (r) => {
        await r.text();
        return r.status;
      }),
    ),
  );
  const failures: Record<string, number> = {};
  for (const a of answers) {
    if (a.status === 'fulfilled' && a.value === 200) continue;
    const why =
      a.status === 'fulfilled'
        ? `HTTP ${a.value}`
        : String((a.reason as { cause?: { code?: string } })?.cause?.code ?? a.reason);
    failures[why] = (failures[why] ?? 0) + 1;
  }
  return failures;
}
const busyFor = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until); // a client busy between bursts: its timers and socket events wait
};

describe('a burst of 1,000 keep-alive requests from Node fetch', () => {
  it('gets 1,000 answers, and so does the next burst after the client was busy past the old 5 s keep-alive timeout', async () => {
    const first = await fetch(srv.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: '{"query":"{ __typename }"}',
    });
    // the server keeps idle connections longer than a client does (the client closes first)
    expect(Number(/timeout=(\d+)/.exec(first.headers.get('keep-alive') ?? '')?.[1])).toBeGreaterThanOrEqual(60);
    await first.text();
    expect(await burst(1000)).toEqual({});
    for (let round = 0; round < 1; round++) {
      await new Promise((r) => setTimeout(r, 2_500)); // idle, the client's loop free: its connections stay pooled
      busyFor(3_000); // then busy: 5.5 s idle when it sends again
      expect(await burst(1000)).toEqual({});
    }
  });
});
