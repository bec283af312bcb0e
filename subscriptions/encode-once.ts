import type WebSocket from 'ws';

/**
 * Encodes each shared subscription result to JSON once, however many sockets receive it.
 *
 * graphql-ws stringifies every `next` message per socket (its id differs). With shared execution every subscriber of
 * an event gets the same result object, so: `onNext` hands graphql-ws that object unchanged, the `jsonMessageReplacer`
 * swaps it for a short token (JSON.stringify then never walks the payload), and each socket's `send` puts the payload's
 * cached JSON in place of the token. Per socket only the ~40-byte envelope is built.
 * @example const enc = encodeOnce(); useServer({ onNext: enc.onNext, jsonMessageReplacer: enc.replacer }, wss); wss.on('connection', enc.wrap)
 */
export function encodeOnce(maxCached = 1024) {
  const MARK = '\u0001lu:'; // a control character never appears unescaped in JSON text, so the token cannot collide
  const ids = new WeakMap<object, number>();
  const json = new Map<number, string>(); // insertion-ordered: the oldest entries are dropped first
  let next = 0;

  function replacer(this: any, key: string, value: unknown) {
    if (key !== 'payload' || this?.type !== 'next' || typeof value !== 'object' || value === null) return value;
    let id = ids.get(value);
    if (id === undefined || !json.has(id)) {
      id = next++;
      ids.set(value, id);
      json.set(id, JSON.stringify(value));
      if (json.size > maxCached) json.delete(json.keys().next().value!);
    }
    return `${MARK}${id}`;
  }

  // JSON.stringify writes the control character escaped, as the six characters \u0001
  const ESCAPED = `\\u0001lu:`;
  const TOKEN = /"\\u0001lu:(\d+)"/;
  function expand(data: unknown): unknown {
    if (typeof data !== 'string' || !data.includes(ESCAPED)) return data;
    return data.replace(TOKEN, (whole, id: string) => json.get(Number(id)) ?? whole);
  }

  return {
    replacer,
    /** keeps the shared result object (graphql-ws would otherwise copy it per socket) */
    onNext: (_ctx: unknown, _id: string, _payload: unknown, _args: unknown, result: any) => result,
    /** to be registered on the WebSocketServer's 'connection' before graphql-ws's own listener */
    wrap(socket: WebSocket) {
      const send = socket.send.bind(socket) as (data: unknown, cb?: (err?: Error) => void) => void;
      (socket as any).send = (data: unknown, cb?: (err?: Error) => void) => send(expand(data), cb);
    },
  };
}
