// The four client examples of docs/partners.md, each run as a partner would: publish with `npm run partner:publish`,
// then call with the real client library and a partner key, against the real Node host (a child process) and the
// real worker in workerd. Also: the libraries react to our unknown-id answer as their documentation says.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { Client, fetchExchange } from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';
import { sha256Hex } from '../common/hash.js';
import { seedProducts } from '../db/catalog-store.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { startLocalWorker, type LocalWorker } from '../kit/worker.js';
import { KEYS, PARTNER_API_KEYS_ENV, PARTNER_KEYS, runPartnerPublish } from '../kit/partners.js';
import { ROOT } from '../kit/root.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { createPartnerClient as createApolloClient } from '../examples/partners/apollo/client.js';
import { PARTNER_PRODUCT as APOLLO_PARTNER_PRODUCT } from '../examples/partners/apollo/operations.js';
import { createPartnerClient as createUrqlClient } from '../examples/partners/urql/client.js';
import { PARTNER_PRODUCT as URQL_PARTNER_PRODUCT } from '../examples/partners/urql/operations.js';
import { executePersisted } from '../examples/partners/codegen/client.js';
import { PartnerProductDocument } from '../examples/partners/codegen/operations.js';
import { fetchPartnerProduct, PARTNER_PRODUCT_ID } from '../examples/partners/fetch/client.js';

const EX = 'examples/partners';
const LAMP = { sku: 'LAMP-1', name: 'Partner Lamp', priceAmount: 4200, currency: 'USD', initialStock: 7 };
const EXPECTED = {
  sku: 'LAMP-1',
  name: 'Partner Lamp',
  price: { amount: 4200, currencyCode: 'USD' },
  availability: { available: 7, soldOut: false },
};
const withTypenames = {
  __typename: 'Product',
  ...EXPECTED,
  price: { __typename: 'Money', ...EXPECTED.price },
  availability: { __typename: 'Availability', ...EXPECTED.availability },
};
const json = async (file: string) => JSON.parse(await readFile(path.join(ROOT, file), 'utf8'));

type Host = { base: string; endpoint: string; stop: () => Promise<void> };
const hosts: Record<string, (db: TestDatabase) => Promise<Host>> = {
  'the Node host': async (db) => {
    const s: ServerProcess = await spawnServer({
      env: { DATABASE_URL: db.url, API_KEYS: PARTNER_API_KEYS_ENV, NODE_ENV: 'test' },
    });
    return { base: s.url, endpoint: s.endpoint, stop: async () => void (await s.stop()) };
  },
  'the worker in workerd': async (db) => {
    const w: LocalWorker = await startLocalWorker({
      databaseUrl: db.url,
      vars: { API_KEYS: PARTNER_API_KEYS_ENV },
      name: 'partners',
    });
    const base = (await w.mf.ready).origin;
    return { base, endpoint: `${base}/graphql`, stop: () => w.stop() };
  },
};

/** Counts the requests a client makes and whether each carried a document. */
function countingFetch() {
  const seen: { method: string; status: number; hasQuery: boolean }[] = [];
  const f: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const hasQuery =
      new URL(req.url).searchParams.has('query') ||
      (req.method === 'POST' && 'query' in JSON.parse(await req.clone().text()));
    const res = await fetch(req);
    seen.push({ method: req.method, status: res.status, hasQuery });
    return res;
  };
  return { fetch: f, seen };
}

describe.each(Object.keys(hosts))('partner examples on %s', (hostName) => {
  let db: TestDatabase;
  let host: Host;
  beforeAll(async () => {
    db = await createTestDatabase({ max: 2 });
    await seedProducts(db.db, [LAMP]);
    host = await hosts[hostName]!(db);
  });
  afterAll(async () => {
    await host?.stop();
    await db?.drop();
  });
  const publish = async (version: string, manifest: string) => {
    const r = await runPartnerPublish(['--app', 'acme', '--version', version, manifest], {
      LASTUNIT_URL: host.base,
      LASTUNIT_ADMIN_KEY: KEYS.admin,
    });
    expect(r.output).toContain(`acme@${version}: published (1 documents`);
    expect(r.code, r.output).toBe(0);
  };

  it('Apollo Client + @apollo/persisted-query-lists: publish the manifest generate-persisted-query-manifest wrote, then query by id', async () => {
    await publish('apollo-1.0.0', `${EX}/apollo/persisted-query-manifest.json`);
    const client = createApolloClient({
      url: host.endpoint,
      partnerKey: PARTNER_KEYS.acme,
      manifest: await json(`${EX}/apollo/persisted-query-manifest.json`),
    });
    const r = await client.query({ query: APOLLO_PARTNER_PRODUCT, variables: { sku: 'LAMP-1' } });
    expect(r.error).toBeUndefined();
    expect(r.data).toEqual({ product: withTypenames });
  });

  it('urql + @urql/exchange-persisted: publish the documents as urql hashes them, then query by id only (enforcePersistedQueries)', async () => {
    await publish('urql-1.0.0', `${EX}/urql/persisted-documents.json`);
    const r = await createUrqlClient({ url: host.endpoint, partnerKey: PARTNER_KEYS.acme })
      .query(URQL_PARTNER_PRODUCT, { sku: 'LAMP-1' })
      .toPromise();
    expect(r.error).toBeUndefined();
    expect(r.data).toEqual({ product: withTypenames });
  });

  it('GraphQL Codegen client preset persistedDocuments: publish gql/persisted-documents.json, then run the typed document by its hash', async () => {
    await publish('codegen-1.0.0', `${EX}/codegen/gql/persisted-documents.json`);
    const data = await executePersisted({ url: host.endpoint, partnerKey: PARTNER_KEYS.acme }, PartnerProductDocument, {
      sku: 'LAMP-1',
    });
    expect(data.product).toEqual(EXPECTED);
  });

  it('plain fetch: publish the .graphql file under its sha256, then GET /graphql?documentId=', async () => {
    await publish('fetch-1.0.0', `${EX}/fetch/persisted-documents.json`);
    expect(await fetchPartnerProduct({ url: host.endpoint, partnerKey: PARTNER_KEYS.acme }, 'LAMP-1')).toEqual(
      EXPECTED,
    );
    // the documents are the app's: another partner app, or a partner key without an app, cannot run them
    for (const key of [PARTNER_KEYS.globex, KEYS.partner])
      await expect(fetchPartnerProduct({ url: host.endpoint, partnerKey: key }, 'LAMP-1')).rejects.toThrow(
        '404 PERSISTED_QUERY_NOT_FOUND',
      );
  });

  it('republishing a version is idempotent for CI; a manifest with a bad document is refused whole at publish time (exit 1, every reason printed)', async () => {
    const env = { LASTUNIT_URL: host.base, LASTUNIT_ADMIN_KEY: KEYS.admin };
    // three CI runs at once (each a process): the same version twice, a bad manifest, a key that is not an admin's
    const twice = (async () => {
      await publish('ci-1.0.0', `${EX}/fetch/persisted-documents.json`);
      return runPartnerPublish(['--app', 'acme', '--version', 'ci-1.0.0', `${EX}/fetch/persisted-documents.json`], env);
    })();
    const good = `query LampName { product(sku: "LAMP-1") { name } }`;
    const unknownField = `query LampCost { product(sku: "LAMP-1") { cost } }`;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-manifest-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'persisted-query-manifest.json');
    const operations = [
      { id: await sha256Hex(good), name: 'LampName', type: 'query', body: good },
      { id: await sha256Hex(good), name: 'LampTampered', type: 'query', body: `${good} ` },
      { id: await sha256Hex(unknownField), name: 'LampCost', type: 'query', body: unknownField },
    ];
    await writeFile(file, JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations }));
    const notAdminRun = runPartnerPublish(
      ['--app', 'acme', '--version', 'bad-2', `${EX}/fetch/persisted-documents.json`],
      { ...env, LASTUNIT_ADMIN_KEY: KEYS.storefront },
    );
    const [again, bad, notAdmin] = await Promise.all([
      twice,
      runPartnerPublish(['--app', 'acme', '--version', 'bad-1', file], env),
      notAdminRun,
    ]);
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain('acme@ci-1.0.0: already published with these documents (1 documents');
    expect(bad.code, bad.output).toBe(1);
    expect(bad.output).toContain('acme@bad-1 was not published (nothing was stored)');
    expect(bad.output).toMatch(
      /INVALID_INPUT at input\.documents\.1\.id: document 1 \(id [0-9a-f]{64}\): the id is not the sha256 of the body/,
    );
    expect(bad.output).toMatch(/INVALID_INPUT at input\.documents\.2\.body: document 2 LampCost .*cost/);
    const res = await fetch(`${host.endpoint}?documentId=${await sha256Hex(good)}`, {
      headers: { authorization: `Bearer ${PARTNER_KEYS.acme}` },
    });
    expect(res.status).toBe(404); // the good document of the refused version was not stored either
    expect(notAdmin.code).toBe(1);
    expect(notAdmin.output).toContain('FORBIDDEN: this operation needs a admin key');
  });

  it('Apollo Client + @apollo/persisted-query-lists runs the shipped list from edge/persisted-query-manifest.json as is, with a partner key without an app', async () => {
    const client = createApolloClient({
      url: host.endpoint,
      partnerKey: KEYS.partner,
      manifest: await json('edge/persisted-query-manifest.json'),
    });
    const query = gql`query ProductAvailability($sku: String!) { product(sku: $sku) { sku availability { sku available soldOut updatedAt } } }`;
    const r = await client.query({ query, variables: { sku: 'LAMP-1' } });
    expect(r.data).toMatchObject({ product: { sku: 'LAMP-1', availability: { available: 7, soldOut: false } } });
  });

  it("Apollo Client's persisted-query link reads our unknown-id answer as PersistedQueryNotFound and resends the document, as documented", async () => {
    for (const [key, expectOk] of [
      [KEYS.storefront, true],
      [PARTNER_KEYS.acme, false],
    ] as const) {
      const counter = countingFetch();
      const link = new PersistedQueryLink({ sha256: (q: string) => sha256Hex(q), useGETForHashedQueries: true }).concat(
        new HttpLink({ uri: host.endpoint, headers: { authorization: `Bearer ${key}` }, fetch: counter.fetch }),
      );
      const client = new ApolloClient({ cache: new InMemoryCache(), link });
      const query = gql`query NeverPublished($sku: String!) { product(sku: $sku) { name } }`;
      const r = await client.query({ query, variables: { sku: 'LAMP-1' }, errorPolicy: 'all' });
      // first by its own hash (unknown here: 404), then, recognising PersistedQueryNotFound, with the document
      expect(counter.seen).toEqual([
        { method: 'GET', status: 404, hasQuery: false },
        { method: 'POST', status: expectOk ? 200 : 403, hasQuery: true },
      ]);
      if (expectOk) expect(r.data).toEqual({ product: { __typename: 'Product', name: 'Partner Lamp' } });
      else expect(JSON.stringify(r.error)).toContain('PERSISTED_QUERY_ONLY'); // a partner key never runs a document
    }
  });

  it("urql's persistedExchange reads our unknown-id answer as PersistedQueryNotFound: it resends the document, or reports it when enforced", async () => {
    const storefront = countingFetch();
    const retrying = new Client({
      url: host.endpoint,
      exchanges: [persistedExchange({ preferGetForPersistedQueries: true }), fetchExchange],
      fetchOptions: { headers: { authorization: `Bearer ${KEYS.storefront}` } },
      fetch: storefront.fetch,
    });
    const unpublished = `query NeverPublished($sku: String!) { product(sku: $sku) { name } }`;
    const ok = await retrying.query(unpublished, { sku: 'LAMP-1' }).toPromise();
    expect(ok.data).toEqual({ product: { name: 'Partner Lamp' } });
    expect(storefront.seen.map((s) => [s.status, s.hasQuery])).toEqual([
      [404, false],
      [200, true],
    ]);

    const partner = countingFetch();
    const enforced = new Client({
      url: host.endpoint,
      exchanges: [
        persistedExchange({ enforcePersistedQueries: true, preferGetForPersistedQueries: true }),
        fetchExchange,
      ],
      fetchOptions: { headers: { authorization: `Bearer ${PARTNER_KEYS.acme}` } },
      fetch: partner.fetch,
    });
    const refused = await enforced.query(unpublished, { sku: 'LAMP-1' }).toPromise();
    expect(refused.error?.graphQLErrors.map((e) => [e.message, e.extensions.code])).toEqual([
      ['PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND'],
    ]);
    expect(partner.seen).toHaveLength(1);
  });
});

describe('partner public reads at the edge', () => {
  let db: TestDatabase;
  let w: LocalWorker;
  beforeAll(async () => {
    db = await createTestDatabase({ max: 2 });
    await seedProducts(db.db, [LAMP]);
    w = await startLocalWorker({
      databaseUrl: db.url,
      vars: { API_KEYS: PARTNER_API_KEYS_ENV, EDGE_CACHE_TTL_SECONDS: '30' },
      name: 'partners-cache',
    });
  });
  afterAll(async () => {
    await w?.stop();
    await db?.drop();
  });

  it("are cached by id and canonical variables for the app's keys, and never served to a caller who may not run the id", async () => {
    const base = (await w.mf.ready).origin;
    const r = await runPartnerPublish(['--app', 'acme', '--version', '1', `${EX}/fetch/persisted-documents.json`], {
      LASTUNIT_URL: base,
      LASTUNIT_ADMIN_KEY: KEYS.admin,
    });
    expect(r.code, r.output).toBe(0);
    const get = async (key: string, variables: string) => {
      const res = await fetch(
        `${base}/graphql?documentId=${PARTNER_PRODUCT_ID}&variables=${encodeURIComponent(variables)}`,
        { headers: { authorization: `Bearer ${key}` } },
      );
      return { status: res.status, cache: res.headers.get('x-lastunit-cache'), body: (await res.json()) as any };
    };
    const first = await get(PARTNER_KEYS.acme, '{"sku":"LAMP-1"}');
    expect(first).toMatchObject({ status: 200, cache: 'MISS', body: { data: { product: EXPECTED } } });
    await new Promise((res) => setTimeout(res, 300)); // the store happens after the response, then the pool says goodbye
    const before = { ...w.bridge.stats };
    const again = await get(PARTNER_KEYS.acme, '{ "sku" : "LAMP-1" }');
    expect(again).toMatchObject({ status: 200, cache: 'HIT', body: first.body });
    expect(w.bridge.stats).toEqual(before); // neither the answer nor the document came from PostgreSQL
    for (const key of [PARTNER_KEYS.globex, KEYS.partner, KEYS.storefront]) {
      const other = await get(key, '{"sku":"LAMP-1"}');
      expect(other.status).toBe(404);
      expect(other.cache).toBeNull();
      expect(other.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    }
  });
});

describe('npm run partner:publish', () => {
  it('exits 2 naming every missing setting, and never sends an admin key over plain http to another machine', async () => {
    const [none, plain] = await Promise.all([
      runPartnerPublish([], { LASTUNIT_URL: undefined, LASTUNIT_ADMIN_KEY: undefined }),
      runPartnerPublish(['--app', 'acme', '--version', '1', `${EX}/fetch/persisted-documents.json`], {
        LASTUNIT_URL: 'http://api.example.com/graphql',
        LASTUNIT_ADMIN_KEY: KEYS.admin,
      }),
    ]);
    expect(none.code).toBe(2);
    for (const name of [
      'LASTUNIT_URL',
      'LASTUNIT_ADMIN_KEY',
      'app: required: --app',
      'version: required: --version',
      'manifest: required',
    ])
      expect(none.output).toContain(name);
    expect(plain.code).toBe(2);
    expect(plain.output).toContain('LASTUNIT_URL: must be an https:// URL (http:// only for localhost)');
  });
});
