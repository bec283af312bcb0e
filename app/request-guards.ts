import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

const refusal = (message: string, code: string) => ({ errors: [{ message, extensions: { code } }] });

/**
 * Refuses a request body over `maxBytes` with 413 and code PAYLOAD_TOO_LARGE, before anything parses it.
 * @example app.use('/graphql', requestBodyLimit(65_536))
 */
export function requestBodyLimit(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => c.json(refusal(`request body larger than ${maxBytes} bytes`, 'PAYLOAD_TOO_LARGE'), 413),
  });
}

/**
 * Refuses batched requests (a JSON array of operations) with 400 and code BATCHING_NOT_SUPPORTED: one request, one
 * operation, so every limit and the rate limit count what they see.
 * @example app.use('/graphql', refuseBatches())
 */
export function refuseBatches(): MiddlewareHandler {
  return async function refuseBatches(c, next) {
    if (c.req.method === 'POST' && (c.req.header('content-type') ?? '').includes('json')) {
      const text = await c.req.raw.clone().text();
      if (text.trimStart().startsWith('[')) {
        return c.json(refusal('batched requests are not supported: send one operation per request', 'BATCHING_NOT_SUPPORTED'), 400);
      }
    }
    return next();
  };
}
