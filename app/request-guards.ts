import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Plugin } from 'graphql-yoga';

const refusal = (message: string, code: string) => ({ errors: [{ message, extensions: { code } }] });

/**
 * Refuses a request body over `maxBytes` with 413 and code PAYLOAD_TOO_LARGE, before anything parses it. A declared
 * Content-Length is judged from the header alone (the body is not touched, so the Node adapter's direct body read stays
 * available); a body of unknown or unparsable length (chunked) is counted as it streams.
 * @example app.use('/graphql', requestBodyLimit(65_536))
 */
export function requestBodyLimit(maxBytes: number): MiddlewareHandler {
  const tooLarge = (c: Context) =>
    c.json(refusal(`request body larger than ${maxBytes} bytes`, 'PAYLOAD_TOO_LARGE'), 413);
  const streamed = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async function requestBodyLimit(c, next) {
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD') return next(); // no body (a Request cannot carry one)
    const length = c.req.header('content-length');
    if (length !== undefined && /^\d+$/.test(length) && c.req.header('transfer-encoding') === undefined)
      return parseInt(length, 10) > maxBytes ? tooLarge(c) : next();
    return streamed(c, next);
  };
}

/** A JSON request body, read and parsed once for every reader (the guards below, the edge cache's origin, Yoga). */
export type GraphqlBody = { text: string; json: { ok: true; value: unknown } | { ok: false; error: unknown } };

const bodies = new WeakMap<Request, GraphqlBody>();

/**
 * The body of a POST with a JSON content type, read and parsed on first use and shared by every later reader of the
 * same request; undefined for any other request (Yoga reads those itself). Once read, the Request's own body is spent:
 * Yoga gets it through useSharedBody.
 * @example const body = await graphqlBodyOf(c); if (body?.json.ok) ...
 */
export async function graphqlBodyOf(c: Context): Promise<GraphqlBody | undefined> {
  const req = c.req.raw;
  if (req.method !== 'POST' || !(req.headers.get('content-type') ?? '').includes('json')) return undefined;
  let body = bodies.get(req);
  if (!body) {
    const text = await req.text();
    let json: GraphqlBody['json'];
    try {
      json = { ok: true, value: JSON.parse(text) };
    } catch (error) {
      json = { ok: false, error };
    }
    body = { text, json };
    bodies.set(req, body);
  }
  return body;
}

/**
 * Hands Yoga's own request parser (the one it chose for this request: its checks and error answers stay its own) the
 * body the guards already read, instead of the spent Request body.
 * @example createYoga({ plugins: [useSharedBody()] })
 */
export function useSharedBody(): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser }) {
      const body = bodies.get(request);
      if (!body || !requestParser) return;
      const { text, json } = body;
      const read = Object.create(request, {
        text: { value: () => Promise.resolve(text) },
        json: { value: () => (json.ok ? Promise.resolve(json.value) : Promise.reject(json.error)) },
      }) as Request;
      setRequestParser(() => requestParser(read));
    },
  };
}

/**
 * Refuses batched requests (a JSON array of operations) with 400 and code BATCHING_NOT_SUPPORTED: one request, one
 * operation, so every limit and the rate limit count what they see.
 * @example app.use('/graphql', refuseBatches())
 */
export function refuseBatches(): MiddlewareHandler {
  return async function refuseBatches(c, next) {
    const body = await graphqlBodyOf(c);
    if (body?.text.trimStart().startsWith('[')) {
      return c.json(
        refusal('batched requests are not supported: send one operation per request', 'BATCHING_NOT_SUPPORTED'),
        400,
      );
    }
    return next();
  };
}
