import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export type Subscription<T> = {
  events: T[];
  /** resolves with the first event (already received or coming) that matches, or rejects after `timeoutMs` */
  waitFor: (match: (e: T) => boolean, timeoutMs?: number) => Promise<T>;
  /** the error the subscription or its connection ended with (e.g. a CloseEvent with code 4403) */
  error: Promise<any>;
  client: Client;
  close: () => Promise<void>;
};

/**
 * One graphql-ws client with one subscription, against a running server (`ws://.../graphql`).
 * @example const s = await subscribe(url, key, 'subscription { availabilityChanged(skus: ["A"]) { version } }')
 */
export async function subscribe<T = any>(
  httpUrl: string,
  key: string | null,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<Subscription<T>> {
  const client = createClient({
    url: `${httpUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: key ? { authorization: `Bearer ${key}` } : {},
    retryAttempts: 0,
    lazy: true,
  });
  const events: T[] = [];
  const waiters = new Set<{ match: (e: T) => boolean; resolve: (e: T) => void }>();
  let rejectError!: (e: any) => void;
  const error = new Promise<any>((resolve) => (rejectError = resolve));
  let acked!: () => void;
  const connected = new Promise<void>((r) => (acked = r));
  client.on('connected', () => acked());
  client.on('closed', (e) => rejectError(e));
  client.subscribe(
    { query, variables },
    {
      next: (r: any) => {
        if (r.errors) return rejectError(r.errors);
        const e = Object.values(r.data)[0] as T;
        events.push(e);
        for (const w of waiters) if (w.match(e)) waiters.delete(w), w.resolve(e);
      },
      error: (e) => rejectError(e),
      complete: () => {},
    },
  );
  await Promise.race([connected, error]);
  // the subscribe message is sent right after the ack; give the server a moment to register it
  await new Promise((r) => setTimeout(r, 250));
  return {
    events,
    error,
    client,
    waitFor: (match, timeoutMs = 10_000) =>
      new Promise<T>((resolve, reject) => {
        const hit = events.find(match);
        if (hit) return resolve(hit);
        const w = { match, resolve: (e: T) => (clearTimeout(t), resolve(e)) };
        const t = setTimeout(
          () => (
            waiters.delete(w),
            reject(new Error(`no matching event in ${timeoutMs} ms; got ${JSON.stringify(events.slice(-5))}`))
          ),
          timeoutMs,
        );
        waiters.add(w);
      }),
    close: () => client.dispose() as Promise<void>,
  };
}
