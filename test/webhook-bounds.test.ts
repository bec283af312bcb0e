// Payment webhook routes are bounded before they read (issue 9, item 6): an unknown provider is answered 404 without
// reading the body, and a body over WEBHOOK_MAX_BODY_BYTES is refused with 413 while it streams. Through the real
// Node host over raw HTTP: the request bodies below never end, so only a server that answers before reading them
// all can answer at all.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from '../kit/keys.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: { DATABASE_URL: tdb.url, API_KEYS: `admin:${KEYS.admin}`, WEBHOOK_MAX_BODY_BYTES: '4096' },
  });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

/**
 * POSTs `path` with a chunked body: `chunks` are written, and the body is left open (never ended) until the answer
 * comes. Resolves with the status and how many bytes had been written when it came.
 */
function postOpenEnded(path: string, chunks: Buffer[], headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string; written: number }>((resolve, reject) => {
    let written = 0;
    const req = http.request(`${srv.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode!, body, written });
      });
    });
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    for (const c of chunks) {
      req.write(c);
      written += c.length;
    }
    req.flushHeaders();
  });
}

describe('payment webhooks are bounded before they read', () => {
  it('answers 404 for an unknown provider without reading the body', async () => {
    const r = await postOpenEnded('/webhooks/payments/paypal', [Buffer.from('{"id":"evt_1",')]);
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toEqual({ received: false, error: 'no payment provider "paypal"' });
  });

  it('refuses a streamed body over WEBHOOK_MAX_BODY_BYTES with 413 while it streams', async () => {
    const chunk = Buffer.alloc(1024, 'x');
    const r = await postOpenEnded(
      '/webhooks/payments/sandbox',
      Array.from({ length: 5 }, () => chunk),
    );
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a declared Content-Length over the limit at once', async () => {
    const r = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${srv.url}/webhooks/payments/sandbox`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(30 * 1024 * 1024) },
      });
      req.on('response', (res) => {
        res.resume();
        req.destroy();
        resolve(res.statusCode!);
      });
      req.on('error', (err) => !req.destroyed && reject(err));
      req.write('{');
      req.flushHeaders();
    });
    expect(r).toBe(413);
  });

  it('still takes a signed delivery within the limit (a bad signature is 400, not a bound)', async () => {
    const res = await fetch(`${srv.url}/webhooks/payments/sandbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lastunit-signature': 't=1,v1=00' },
      body: JSON.stringify({ id: 'evt_small', type: 'payment.succeeded' }),
    });
    expect(res.status).toBe(400);
  });
});
