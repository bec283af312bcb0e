// Database session bounds (issue 9, item 7): DATABASE_LOCK_TIMEOUT_MS reaches the sessions of both drivers, so a
// request stuck behind a lock held elsewhere becomes an error instead of waiting. Through the real Node host (pg) and
// the worker in workerd (Neon driver).
import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { runScript, spawnServer, type ServerProcess } from '../kit/server.js';
import { WORKER_API_KEYS, startLocalWorker, type LocalWorker } from '../kit/worker.js';

const t = await startTestApp();
await t.product('TIMEOUT-1', 5);
const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

const QUERY = JSON.stringify({ query: `{ product(sku: "TIMEOUT-1") { sku } }` });
const request = (url: string) =>
  new Request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
    body: QUERY,
  });

/**
 * Holds an exclusive lock on `products` while `send` runs, and gives it up at the latest after `releaseAfterMs` (so a
 * server without the bound answers *after* the lock is gone, with data). Resolves with the answer's body.
 */
async function whileLocked(send: () => Promise<Response>, releaseAfterMs = 8_000) {
  const holder = new pg.Client({ connectionString: t.dbUrl });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE products IN ACCESS EXCLUSIVE MODE');
    const release = setTimeout(() => void holder.query('ROLLBACK').catch(() => {}), releaseAfterMs);
    try {
      const res = await send();
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
    } finally {
      clearTimeout(release);
    }
  } finally {
    await holder.query('ROLLBACK').catch(() => {});
    await holder.end();
  }
}

describe('DATABASE_LOCK_TIMEOUT_MS bounds a wait for a lock', () => {
  it('on the Node host (pg): the request answers a retryable 503 while the lock is still held', async () => {
    const srv: ServerProcess = await spawnServer({
      env: {
        DATABASE_URL: t.dbUrl,
        API_KEYS: WORKER_API_KEYS,
        DATABASE_LOCK_TIMEOUT_MS: '200',
        RATE_LIMIT_PER_WINDOW: '0',
      },
    });
    stops.push(() => srv.stop());
    const r = await whileLocked(() => fetch(request(srv.endpoint)));
    // not a fault: the statement rolled back, so the client is told to send the same request again (503, Retry-After,
    // retryable), with no database detail; the host's log names the lock timeout (SQLSTATE 55P03)
    expect(r.status).toBe(503);
    expect(r.retryAfter).toBe('1');
    expect(r.body.errors).toEqual([
      expect.objectContaining({
        message:
          'The database is too busy for this request right now; send the same request again (same idempotency key).',
        path: ['product'],
        extensions: expect.objectContaining({ code: 'DATABASE_UNAVAILABLE', retryable: true }),
      }),
    ]);
    expect(r.body.data?.product ?? null).toBeNull();
    expect(srv.output()).toContain('canceling statement due to lock timeout');
    // and without the lock, the same request answers
    const ok = await fetch(request(srv.endpoint));
    expect(((await ok.json()) as any).data.product.sku).toBe('TIMEOUT-1');
  });

  it('in workerd (Neon driver): the request answers a retryable 503 while the lock is still held', async () => {
    const w: LocalWorker = await startLocalWorker({
      databaseUrl: t.dbUrl,
      vars: { DATABASE_LOCK_TIMEOUT_MS: '200' },
      name: 'timeouts',
    });
    stops.push(() => w.stop());
    const r = await whileLocked(() => w.fetch(request('http://edge.test/graphql')));
    // as on the Node host (the worker's log, not captured here, names the lock timeout)
    expect(r.status).toBe(503);
    expect(r.body.errors).toEqual([
      expect.objectContaining({
        message:
          'The database is too busy for this request right now; send the same request again (same idempotency key).',
        path: ['product'],
        extensions: expect.objectContaining({ code: 'DATABASE_UNAVAILABLE', retryable: true }),
      }),
    ]);
    expect(r.body.data?.product ?? null).toBeNull();
    const ok = await w.fetch(request('http://edge.test/graphql'));
    expect(((await ok.json()) as any).data.product.sku).toBe('TIMEOUT-1');
  });
});

describe('DATABASE_CONNECT_TIMEOUT_MS bounds a wait for a connection', () => {
  it('a database that accepts the connection and never answers fails the start instead of hanging it', async () => {
    // a TCP server that takes connections and says nothing, as a stuck database or a black-holed proxy does
    const sockets: net.Socket[] = [];
    const silent = net.createServer((sock) => void sockets.push(sock));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    stops.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    });
    const port = (silent.address() as net.AddressInfo).port;
    // (runScript blocks this process; the kernel still completes the child's connection from the listen backlog, and
    // nobody ever answers it: exactly a database that hangs)
    const r = runScript(
      'node/migrate-cli.ts',
      { DATABASE_URL: `postgres://u:p@127.0.0.1:${port}/db`, DATABASE_CONNECT_TIMEOUT_MS: '300' },
      30_000,
    );
    expect(r.status).toBe(1); // a start failure, not the 30 s kill (status null)
    expect(`${r.stdout}${r.stderr}`).toMatch(/timeout/i);
  });
});
