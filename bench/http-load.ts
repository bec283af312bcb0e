// placeOrder over HTTP: autocannon closed loop (`connections` clients, each waits for its answer before sending again),
// every request with a distinct idempotency key and customer, every answer classified from its GraphQL body.
import autocannon from 'autocannon';
import { newOutcome, noteError, type LoadOutcome } from './load-outcome.js';
import type { ServerProcess } from './server.js';

export const PLACE_ORDER = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed order { id status } userErrors { code } } }`;
const CREATE_PRODUCT = `mutation($input: CreateProductInput!) { createProduct(input: $input) { product { sku } userErrors { code message } } }`;
const REFUSALS = new Set(['SOLD_OUT', 'INSUFFICIENT_STOCK']);

/** One GraphQL request (setup only, not measured). */
export async function gql(
  endpoint: string,
  key: string,
  query: string,
  variables: Record<string, unknown>,
): Promise<any> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = await res.json().catch(() => null);
  if (res.status !== 200 || !body || body.errors)
    throw new Error(`GraphQL fault: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

/** Admin: a product with `stock` units, through the API. */
export async function createProduct(srv: ServerProcess, sku: string, stock: number): Promise<void> {
  const data = await gql(srv.endpoint, srv.keys.admin, CREATE_PRODUCT, {
    input: { sku, name: `Bench ${sku}`, priceAmount: 1999, currencyCode: 'USD', initialStock: stock },
  });
  const p = data.createProduct;
  if (p.userErrors.length || p.product?.sku !== sku)
    throw new Error(`createProduct ${sku} failed: ${JSON.stringify(p)}`);
}

export type HttpLoadOptions = {
  srv: ServerProcess;
  sku: string;
  /** distinct per scenario and run: keys are `${keyPrefix}-${n}` */
  keyPrefix: string;
  connections: number;
  /** total requests (flash sale); else `durationS` */
  amount?: number;
  durationS?: number;
  signal?: AbortSignal;
  progress?: (line: string) => void;
};

export type HttpOutcome = LoadOutcome & { keysSent: number };

/** Classifies one placeOrder answer. */
function classify(o: LoadOutcome, status: number, raw: string) {
  if (status !== 200) return noteError(o, `HTTP ${status}: ${raw}`);
  let body: any;
  try {
    body = JSON.parse(raw);
  } catch {
    return noteError(o, `unparsable body: ${raw}`);
  }
  if (body.errors) return noteError(o, `GraphQL errors: ${JSON.stringify(body.errors)}`);
  const p = body.data?.placeOrder;
  if (!p) return noteError(o, `no payload: ${raw}`);
  if (p.replayed) return noteError(o, `unexpected replay of a fresh key: ${raw}`);
  if (p.order?.status === 'RESERVED' && p.userErrors.length === 0) o.claimed++;
  else if (REFUSALS.has(p.userErrors[0]?.code)) o.refused++;
  else noteError(o, `unexpected answer: ${raw}`);
}

export type QueryLoadOptions = {
  /** the server's port on 127.0.0.1 */
  port: number;
  /** Authorization header value, if any */
  authorization?: string;
  /** the body of the next request */
  nextBody: () => string;
  /** counts one answer into the outcome */
  classify: (o: LoadOutcome, status: number, body: string) => void;
  connections: number;
  amount?: number;
  durationS?: number;
  signal?: AbortSignal;
  /** told once a second how many answers came so far */
  progress?: (line: string) => void;
};

/**
 * A closed loop of POST /graphql requests (autocannon), each answer classified, until `amount` answers or `durationS`.
 * @example const o = await runHttpLoad({ port, nextBody: () => '{"query":"{ __typename }"}', classify, connections: 64, durationS: 5 })
 */
export function runHttpLoad(opts: QueryLoadOptions): Promise<LoadOutcome> {
  const o = newOutcome();
  const connections = opts.amount ? Math.min(opts.connections, opts.amount) : opts.connections;
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(new Error('aborted before start'));
    const started = process.hrtime.bigint();
    let answers = 0;
    const ticker = opts.progress
      ? setInterval(
          () =>
            opts.progress!(`  ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(0)} s: ${answers} answers`),
          1000,
        )
      : undefined;
    const inst = autocannon(
      {
        url: `http://127.0.0.1:${opts.port}`,
        connections,
        ...(opts.amount ? { amount: opts.amount } : { duration: opts.durationS ?? 10 }),
        // autocannon looks at its stop flag once per sample: every 100 ms, so a 0.5 s round ends after 0.5 s, not 1 s
        // (its per-sample histograms are not used: every answer is classified and timed here)
        sampleInt: 100,
        timeout: 30, // seconds; a shared 2-core machine can stall a commit for several
        pipelining: 1,
        requests: [
          {
            method: 'POST',
            path: '/graphql',
            headers: {
              'content-type': 'application/json',
              ...(opts.authorization ? { authorization: opts.authorization } : {}),
            },
            setupRequest: (req) => ({ ...req, body: opts.nextBody() }),
            onResponse: (status, body) => {
              answers++;
              opts.classify(o, status, body);
            },
          },
        ],
      },
      (err) => {
        clearInterval(ticker);
        opts.signal?.removeEventListener('abort', onAbort);
        o.elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
        o.requests = o.claimed + o.refused + o.errors;
        if (err) reject(err);
        else if (opts.signal?.aborted)
          reject(new Error(`aborted: ${String(opts.signal.reason?.message ?? opts.signal.reason)}`));
        else resolve(o);
      },
    );
    // every answer, whatever its status, with its response time in ms (autocannon's own histogram keeps whole ms only)
    inst.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => o.latency.record(ms));
    inst.on('reqError', (err: Error) => noteError(o, `transport: ${err.message}`));
    const onAbort = () => inst.stop();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs placeOrder (quantity 1) against `sku` until `amount` answers or `durationS` seconds.
 * @example const o = await runPlaceOrderLoad({ srv, sku: 'FLASH', keyPrefix: 'r1-flash', connections: 64, amount: 2000 })
 */
export async function runPlaceOrderLoad(opts: HttpLoadOptions): Promise<HttpOutcome> {
  let keysSent = 0;
  const nextBody = () => {
    const n = keysSent++;
    return JSON.stringify({
      query: PLACE_ORDER,
      variables: {
        input: {
          idempotencyKey: `${opts.keyPrefix}-${n}`,
          customerId: `${opts.keyPrefix}-buyer-${n}`,
          lines: [{ sku: opts.sku, quantity: 1 }],
        },
      },
    });
  };
  const o = await runHttpLoad({
    ...opts,
    port: opts.srv.port,
    authorization: `Bearer ${opts.srv.keys.storefront}`,
    nextBody,
    classify,
  });
  return { ...o, keysSent };
}

/** `{ __typename }`: an answer of `{"data":{"__typename":"Query"}}` counts as claimed (the request was served). */
export function classifyTrivial(o: LoadOutcome, status: number, raw: string) {
  if (status === 200 && raw.includes('"__typename":"Query"')) o.claimed++;
  else noteError(o, `HTTP ${status}: ${raw}`);
}
export const TRIVIAL_BODY = JSON.stringify({ query: '{ __typename }' });

/**
 * `{ __typename }` from `connections` clients for `durationS` seconds, with `authorization` (a server's storefront
 * key; none for a bare Yoga).
 * @example const o = await runTrivialLoad({ port: srv.port, authorization: `Bearer ${srv.keys.storefront}`, connections: 64, durationS: 5 })
 */
export const runTrivialLoad = (opts: Omit<QueryLoadOptions, 'nextBody' | 'classify'>) =>
  runHttpLoad({ ...opts, nextBody: () => TRIVIAL_BODY, classify: classifyTrivial });
