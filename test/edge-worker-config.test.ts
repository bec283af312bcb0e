import { afterAll, describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { startLocalWorker, type LocalWorker } from '../kit/worker.js';

const t = await startTestApp();
const workers: LocalWorker[] = [];
afterAll(async () => {
  for (const w of workers) await w.stop();
});

const post = (w: LocalWorker, query: string) =>
  w.fetch(
    new Request('http://edge.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
      body: JSON.stringify({ query }),
    }),
  );

describe('the worker configuration', () => {
  it('runs as production by default: introspection refused, normal queries answered', async () => {
    const w = await startLocalWorker({ databaseUrl: t.dbUrl, vars: { NODE_ENV: undefined }, name: 'prod' });
    workers.push(w);
    const intro = await post(w, `{ __schema { queryType { name } } }`);
    expect(intro.status).toBe(400);
    expect(((await intro.json()) as any).errors[0].extensions.code).toBe('INTROSPECTION_DISABLED');
    const ok = await post(w, `{ __typename }`);
    expect(((await ok.json()) as any).data).toEqual({ __typename: 'Query' });
  });

  it('answers 500 MISCONFIGURED, without echoing any value, when a binding is invalid', async () => {
    const w = await startLocalWorker({
      databaseUrl: t.dbUrl,
      vars: { API_KEYS: 'root:secret-value-123' },
      name: 'bad',
    });
    workers.push(w);
    const r = await post(w, `{ __typename }`);
    expect(r.status).toBe(500);
    const text = await r.text();
    expect(JSON.parse(text).errors[0].extensions.code).toBe('MISCONFIGURED');
    expect(text).not.toContain('secret-value');
  });

  it('holds API keys to 24+ characters whatever NODE_ENV says (the production profile is always on in Workers)', async () => {
    const short = 'admin_key_23_characters';
    const w = await startLocalWorker({
      databaseUrl: t.dbUrl,
      vars: { API_KEYS: `storefront:${KEYS.storefront},admin:${short}`, NODE_ENV: 'test' },
      name: 'short',
    });
    workers.push(w);
    const r = await post(w, `{ __typename }`);
    expect(r.status).toBe(500);
    const text = await r.text();
    expect(JSON.parse(text).errors[0].extensions.code).toBe('MISCONFIGURED');
    expect(text).not.toContain(short);
  });
});
