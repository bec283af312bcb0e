// A graphql-transport-ws client at the message level, for tests that must see exactly what the server sends (error
// payloads, close codes) or open thousands of subscriptions without a client library's bookkeeping.
import WebSocket from 'ws';

export type RawSocket = {
  ws: WebSocket;
  /** every message received, parsed */
  messages: any[];
  /** resolves on connection_ack, rejects if the socket closes first */
  acked: Promise<void>;
  /** resolves with the close code and reason */
  closed: Promise<{ code: number; reason: string }>;
  send: (message: unknown) => void;
  subscribe: (id: string, query: string, variables?: Record<string, unknown>) => void;
  /** the first message for `id` of one of `types` (error, next, complete), waiting up to `ms` */
  answer: (id: string, types?: string[], ms?: number) => Promise<any>;
};

/**
 * Opens a socket to `httpUrl`/graphql and, unless `init` is false, sends connection_init with the key.
 * @example const s = openSocket(srv.url, key); await s.acked; s.subscribe('1', 'subscription { ... }')
 */
export function openSocket(
  httpUrl: string,
  key: string | null,
  opts: { init?: boolean; headers?: Record<string, string> } = {},
): RawSocket {
  const ws = new WebSocket(`${httpUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', {
    headers: opts.headers,
  });
  const messages: any[] = [];
  const waiters = new Set<() => void>();
  let resolveAck!: () => void;
  let rejectAck!: (e: Error) => void;
  const acked = new Promise<void>((res, rej) => ((resolveAck = res), (rejectAck = rej)));
  acked.catch(() => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      rejectAck(new Error(`closed ${code} ${reason}`));
      resolve({ code, reason: String(reason) });
    }),
  );
  ws.on('error', () => {}); // the close event reports what happened
  ws.on('message', (raw) => {
    const m = JSON.parse(String(raw));
    if (m.type === 'connection_ack') resolveAck();
    messages.push(m);
    for (const w of waiters) w();
  });
  const send = (message: unknown) => ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  if (opts.init !== false)
    ws.on('open', () => send({ type: 'connection_init', payload: key ? { authorization: `Bearer ${key}` } : {} }));
  return {
    ws,
    messages,
    acked,
    closed,
    send,
    subscribe: (id, query, variables = {}) => send({ id, type: 'subscribe', payload: { query, variables } }),
    answer: (id, types = ['error', 'next', 'complete'], ms = 10_000) =>
      new Promise((resolve, reject) => {
        const find = () => messages.find((m) => m.id === id && types.includes(m.type));
        const hit = find();
        if (hit) return resolve(hit);
        const check = () => {
          const m = find();
          if (m) waiters.delete(check), clearTimeout(timer), resolve(m);
        };
        const timer = setTimeout(
          () => (
            waiters.delete(check),
            reject(new Error(`no ${types.join('/')} for ${id} in ${ms} ms: ${JSON.stringify(messages.slice(-3))}`))
          ),
          ms,
        );
        waiters.add(check);
      }),
  };
}
