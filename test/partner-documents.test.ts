import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../common/hash.js';
import { PUBLISH_PARTNER_DOCUMENTS } from '../node/partner-publish.js';
import { PARTNER_API_KEYS, PARTNER_KEYS } from '../kit/partners.js';
import { KEYS, startTestApp } from './support/app.js';

// Limits tighter than the defaults, so the publish-time check is seen to use the app's configured limits.
const LIMITS = { maxDepth: 4, maxAliases: 3, maxTokens: 300, maxCost: 60 };
const MISS_TTL_MS = 300;
const t = await startTestApp({ keys: PARTNER_API_KEYS, limits: LIMITS, partnerDocuments: { missTtlMs: MISS_TTL_MS } });
await t.product('PD-1', 50, 1999);

type Doc = { id: string; body: string };
const doc = async (body: string): Promise<Doc> => ({ id: await sha256Hex(body), body });
const PRICE = `query PartnerPrice($sku: String!) { product(sku: $sku) { sku name price { amount currencyCode } } }`;
const HOLD = `mutation PartnerHold($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id status } userErrors { code } } }`;

async function publish(input: { app: string; version: string; documents: Doc[] }, key = KEYS.admin) {
  const r = await t.gql(PUBLISH_PARTNER_DOCUMENTS, { input }, key);
  return { status: r.status, errors: r.body.errors, ...(r.body.data?.publishPartnerDocuments ?? {}) } as {
    status: number;
    errors?: { extensions: { code: string } }[];
    publication: { app: string; version: string; documentCount: number; publishedAt: string; replayed: boolean } | null;
    userErrors: { code: string; field: string[] | null; message: string }[];
  };
}

/** Runs a persisted id with `key`: GET with `documentId` (or the APQ extension), or POST with either in the body. */
async function run(
  id: string,
  variables: Record<string, unknown>,
  key: string,
  how: 'GET documentId' | 'GET apq' | 'POST documentId' | 'POST apq' = 'GET documentId',
) {
  const extensions = { persistedQuery: { version: 1, sha256Hash: id } };
  const headers = { authorization: `Bearer ${key}`, accept: 'application/graphql-response+json, application/json' };
  const res =
    how === 'GET documentId'
      ? await t.app.request(
          `/graphql?${new URLSearchParams({ documentId: id, variables: JSON.stringify(variables) })}`,
          { headers },
        )
      : how === 'GET apq'
        ? await t.app.request(
            `/graphql?${new URLSearchParams({ extensions: JSON.stringify(extensions), variables: JSON.stringify(variables) })}`,
            { headers },
          )
        : await t.app.request('/graphql', {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify(how === 'POST apq' ? { extensions, variables } : { documentId: id, variables }),
          });
  return { status: res.status, body: (await res.json()) as any };
}

const expectNotFound = (r: { status: number; body: any }) => {
  expect(r.status).toBe(404);
  // the message urql matches and the code Apollo Client matches: both then fall back as their docs say
  expect(r.body.errors[0]).toMatchObject({
    message: 'PersistedQueryNotFound',
    extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
  });
  expect(r.body.data).toBeUndefined();
};

describe('publishPartnerDocuments', () => {
  it('publishes a version; a partner key of that app then runs its documents by id, queries over GET and POST, mutations over POST', async () => {
    const [price, hold] = await Promise.all([doc(PRICE), doc(HOLD)]);
    const r = await publish({ app: 'acme', version: '1.0.0', documents: [price, hold] });
    expect(r.userErrors).toEqual([]);
    expect(r.publication).toMatchObject({ app: 'acme', version: '1.0.0', documentCount: 2, replayed: false });

    for (const how of ['GET documentId', 'GET apq', 'POST documentId', 'POST apq'] as const) {
      const got = await run(price.id, { sku: 'PD-1' }, PARTNER_KEYS.acme, how);
      expect(got.status, how).toBe(200);
      expect(got.body.data.product, how).toEqual({
        sku: 'PD-1',
        name: 'Product PD-1',
        price: { amount: 1999, currencyCode: 'USD' },
      });
    }
    const held = await run(
      hold.id,
      { input: { idempotencyKey: 'pd-hold-1', customerId: 'acme-shopper', lines: [{ sku: 'PD-1', quantity: 1 }] } },
      PARTNER_KEYS.acme,
      'POST apq',
    );
    expect(held.body.data.placeOrder).toMatchObject({ order: { status: 'RESERVED' }, userErrors: [] });
    expect((await t.inventory('PD-1')).reserved).toBe(1);
  });

  it('refuses the whole version when any document fails, one userError naming each bad document, and stores nothing', async () => {
    const good = await doc(`query GoodOne($sku: String!) { product(sku: $sku) { name } }`);
    const otherBody = `query Tampered($sku: String!) { product(sku: $sku) { sku } }`;
    const documents: Doc[] = [
      good,
      { id: good.id, body: otherBody }, // 1: the id of another body
      { id: 'not-a-sha256', body: good.body }, // 2
      await doc(`query Broken { product(sku: "x") { sku `), // 3: syntax
      await doc(`query Unknown { product(sku: "x") { sku secretCost } }`), // 4: not in the schema
      await doc(
        `mutation TooDeep($input: PlaceOrderInput!) { placeOrder(input: $input) { order { lines { unitPrice { amount } } } } }`,
      ), // 5
      await doc(
        `query TooManyAliases { a: product(sku: "a") { sku } b: product(sku: "b") { sku } c: product(sku: "c") { sku } d: product(sku: "d") { sku } }`,
      ), // 6
      await doc(`query TooManyTokens { product(sku: "x") { ${'sku '.repeat(300)} } }`), // 7
      await doc(`query TooCostly($id: ID!) { order(id: $id) { ...O } again: order(id: $id) { ...O } }
        fragment O on Order { id status customerId createdAt updatedAt total { amount currencyCode } lines { sku quantity unitPrice { amount currencyCode } } reservation { state expiresAt } }`), // 8
      await doc(`subscription Live($skus: [String!]!) { availabilityChanged(skus: $skus) { available } }`), // 9
      await doc(`query One { product(sku: "a") { sku } } query Two { product(sku: "b") { sku } }`), // 10
    ];
    const r = await publish({ app: 'acme', version: '2.0.0', documents });
    expect(r.publication).toBeNull();
    const byDocument = Object.fromEntries(r.userErrors.map((e) => [e.field!.slice(0, 4).join('.'), e]));
    const at = (i: number, part: 'id' | 'body') => byDocument[`input.documents.${i}.${part}`]!;
    expect(r.userErrors.map((e) => e.field![2])).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    for (const e of r.userErrors) expect(e.code).toBe('INVALID_INPUT');
    expect(at(1, 'id').message).toContain(`is not the sha256 of the body (${await sha256Hex(otherBody)} is)`);
    expect(at(2, 'id').message).toMatch(/64 lowercase hex digits/);
    expect(at(3, 'body').message).toMatch(/syntax error/i);
    expect(at(4, 'body').message).toMatch(/^document 4 Unknown \(id [0-9a-f]{64}\): .*secretCost/);
    expect(at(5, 'body').message).toMatch(/^document 5 TooDeep .*QUERY_TOO_DEEP/);
    expect(at(6, 'body').message).toMatch(/^document 6 TooManyAliases .*TOO_MANY_ALIASES/);
    expect(at(7, 'body').message).toMatch(/TOO_MANY_TOKENS/);
    expect(at(8, 'body').message).toMatch(/^document 8 TooCostly .*QUERY_TOO_COMPLEX/);
    expect(at(9, 'body').message).toMatch(/^document 9 Live .*subscriptions are not run by id/);
    expect(at(10, 'body').message).toMatch(/exactly one operation/);

    // nothing stored: the good document is unknown, the version is free
    expectNotFound(await run(good.id, { sku: 'PD-1' }, PARTNER_KEYS.acme));
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM partner_app_versions WHERE app = 'acme' AND version = '2.0.0'`,
    );
    expect(rows[0].n).toBe(0);
    const again = await publish({ app: 'acme', version: '2.0.0', documents: [good] });
    expect(again.publication).toMatchObject({ version: '2.0.0', documentCount: 1, replayed: false });
    await new Promise((res) => setTimeout(res, MISS_TTL_MS + 50)); // the miss above is remembered that long
    expect((await run(good.id, { sku: 'PD-1' }, PARTNER_KEYS.acme)).body.data.product.name).toBe('Product PD-1');
  });

  it('checks with the limits the server enforces at call time: the refused documents are refused there by the same codes', async () => {
    const send = async (query: string, variables: Record<string, unknown> = {}) =>
      (await t.gql(query, variables, KEYS.admin)).body.errors?.[0]?.extensions?.code;
    expect(
      await send(
        `mutation TooDeep($input: PlaceOrderInput!) { placeOrder(input: $input) { order { lines { unitPrice { amount } } } } }`,
        {
          input: { idempotencyKey: 'x', customerId: 'x', lines: [{ sku: 'PD-1', quantity: 1 }] },
        },
      ),
    ).toBe('QUERY_TOO_DEEP');
    expect(
      await send(
        `query { a: product(sku: "a") { sku } b: product(sku: "b") { sku } c: product(sku: "c") { sku } d: product(sku: "d") { sku } }`,
      ),
    ).toBe('TOO_MANY_ALIASES');
    expect(await send(`query { product(sku: "x") { ${'sku '.repeat(300)} } }`)).toBe('TOO_MANY_TOKENS');
    // one alias fewer, one level shallower, fewer tokens: accepted at publish time and at call time alike
    const fine = await doc(
      `query ThreeAliases { a: product(sku: "PD-1") { sku } b: product(sku: "PD-1") { sku } c: product(sku: "PD-1") { sku } }`,
    );
    expect((await publish({ app: 'acme', version: '2.1.0', documents: [fine] })).userErrors).toEqual([]);
    expect((await run(fine.id, {}, PARTNER_KEYS.acme)).body.data).toEqual({
      a: { sku: 'PD-1' },
      b: { sku: 'PD-1' },
      c: { sku: 'PD-1' },
    });
  });

  it('is idempotent for the same version and documents (in any order), and a published version never takes other documents', async () => {
    const [a, b, c] = await Promise.all([
      doc(`query GlobexA($sku: String!) { product(sku: $sku) { sku } }`),
      doc(`query GlobexB($sku: String!) { product(sku: $sku) { name } }`),
      doc(`query GlobexC($sku: String!) { product(sku: $sku) { price { amount } } }`),
    ]);
    const first = await publish({ app: 'globex', version: '7', documents: [a, b] });
    expect(first.publication).toMatchObject({ documentCount: 2, replayed: false });
    const replay = await publish({ app: 'globex', version: '7', documents: [b, a, b] });
    expect(replay.userErrors).toEqual([]);
    expect(replay.publication).toEqual({ ...first.publication, replayed: true });
    for (const other of [[a], [a, b, c]]) {
      const refused = await publish({ app: 'globex', version: '7', documents: other });
      expect(refused.publication).toBeNull();
      expect(refused.userErrors).toEqual([
        {
          code: 'VERSION_ALREADY_PUBLISHED',
          field: ['input', 'version'],
          message: expect.stringMatching(/^globex@7 was published at .* with other documents/),
        },
      ]);
    }
    expectNotFound(await run(c.id, { sku: 'PD-1' }, PARTNER_KEYS.globex));
    expect((await run(b.id, { sku: 'PD-1' }, PARTNER_KEYS.globex)).body.data.product.name).toBe('Product PD-1');
  });

  it('under concurrent publishes of one version stores exactly one set of documents; twins replay it, the others are refused', async () => {
    const x = [await doc(`query RaceX { product(sku: "PD-1") { sku } }`)];
    const y = [await doc(`query RaceY { product(sku: "PD-1") { name } }`)];
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => publish({ app: 'globex', version: 'race', documents: i % 2 ? x : y })),
    );
    const winners = answers.filter((r) => r.publication?.replayed === false);
    expect(winners).toHaveLength(1);
    const winnerIsX = answers.indexOf(winners[0]!) % 2 === 1;
    answers.forEach((r, i) => {
      if (r === winners[0]) return;
      if ((i % 2 === 1) === winnerIsX) expect(r.publication?.replayed).toBe(true);
      else expect(r.userErrors.map((e) => e.code)).toEqual(['VERSION_ALREADY_PUBLISHED']);
    });
    const { rows } = await t.db.query(`SELECT id FROM partner_documents WHERE app = 'globex' AND version = 'race'`);
    expect(rows.map((r) => r.id)).toEqual([(winnerIsX ? x : y)[0]!.id]);
  });

  it('is for admin keys: a storefront key is refused with FORBIDDEN, a partner key may not even send the document', async () => {
    const d = await doc(`query NotMine { product(sku: "PD-1") { sku } }`);
    const store = await publish({ app: 'acme', version: '9', documents: [d] }, KEYS.storefront);
    expect(store.status).toBe(403);
    expect(store.errors![0]!.extensions.code).toBe('FORBIDDEN');
    const partner = await publish({ app: 'acme', version: '9', documents: [d] }, PARTNER_KEYS.acme);
    expect(partner.status).toBe(403);
    expect(partner.errors![0]!.extensions.code).toBe('PERSISTED_QUERY_ONLY');
    expectNotFound(await run(d.id, {}, PARTNER_KEYS.acme));
  });

  it('names a bad app, version or document count', async () => {
    const d = await doc(`query Fine { product(sku: "PD-1") { sku } }`);
    const r = await publish({ app: 'Acme_Corp', version: '', documents: [] });
    expect(r.userErrors.map((e) => e.field)).toEqual([
      ['input', 'app'],
      ['input', 'version'],
      ['input', 'documents'],
    ]);
    expect((await publish({ app: 'acme', version: '1.0.0 beta', documents: [d] })).userErrors[0]!.field).toEqual([
      'input',
      'version',
    ]);
  });
});

describe('running partner documents by id', () => {
  it("keeps each app to its own documents: another app's key, a partner key without an app and a storefront key get PersistedQueryNotFound (404)", async () => {
    const price = await doc(PRICE); // published for acme above
    expect((await run(price.id, { sku: 'PD-1' }, PARTNER_KEYS.acme)).status).toBe(200);
    for (const key of [PARTNER_KEYS.globex, KEYS.partner, KEYS.storefront, KEYS.admin])
      expectNotFound(await run(price.id, { sku: 'PD-1' }, key));
  });

  it('still runs the shipped operations for every partner key, with or without an app', async () => {
    for (const key of [PARTNER_KEYS.acme, PARTNER_KEYS.globex, KEYS.partner]) {
      const r = await t.persisted('ProductAvailability', { sku: 'PD-1' }, key);
      expect(r.status).toBe(200);
      expect(r.body.data.product.availability.sku).toBe('PD-1');
    }
  });

  it('keeps every published version of an app callable (old builds stay in the field)', async () => {
    const older = await doc(PRICE); // acme 1.0.0
    const newer = await doc(`query PartnerName($sku: String!) { product(sku: $sku) { name } }`);
    expect((await publish({ app: 'acme', version: '1.1.0', documents: [newer] })).publication?.replayed).toBe(false);
    expect((await run(older.id, { sku: 'PD-1' }, PARTNER_KEYS.acme)).body.data.product.price.amount).toBe(1999);
    expect((await run(newer.id, { sku: 'PD-1' }, PARTNER_KEYS.acme)).body.data.product.name).toBe('Product PD-1');
  });

  it('remembers an unknown id only briefly: a version published right after the miss is found once the miss has expired', async () => {
    const late = await doc(`query PublishedLate($sku: String!) { product(sku: $sku) { sku name } }`);
    expectNotFound(await run(late.id, { sku: 'PD-1' }, PARTNER_KEYS.acme));
    expect((await publish({ app: 'acme', version: 'late', documents: [late] })).publication?.replayed).toBe(false);
    const started = Date.now();
    let r = await run(late.id, { sku: 'PD-1' }, PARTNER_KEYS.acme);
    while (r.status === 404 && Date.now() - started < MISS_TTL_MS * 10) {
      await new Promise((res) => setTimeout(res, 50));
      r = await run(late.id, { sku: 'PD-1' }, PARTNER_KEYS.acme);
    }
    expect(r.status).toBe(200);
    expect(r.body.data.product).toEqual({ sku: 'PD-1', name: 'Product PD-1' });
  });

  it('cannot run other text than its id names: PostgreSQL refuses a row whose id is not the sha256 of its body', async () => {
    const real = await doc(`query Real { product(sku: "PD-1") { sku } }`);
    await expect(
      t.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO partner_app_versions (app, version, fingerprint, documents) VALUES ('acme', 'forged', $1, 1)`,
          [real.id],
        );
        await tx.query(
          `INSERT INTO partner_documents (app, version, id, body, operation_name, operation_type, root_fields) VALUES ('acme', 'forged', $1, $2, 'Real', 'query', '{product}')`,
          [real.id, `query Real { order(id: "someone-else") { customerId } }`],
        );
      }),
    ).rejects.toThrow(/partner_documents_id_is_body_sha256/);
  });
});
