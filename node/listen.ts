// The Node host's HTTP server, with connection bounds sized for a burst of keep-alive clients.
//
// A keep-alive connection is closed by whichever side times it out first. Node's default server keep-alive timeout is
// 5 s; Node's fetch (undici) keeps an idle connection for the server's `Keep-Alive: timeout` hint minus 2 s, and drops
// it only when its own timer runs. A client whose event loop is late by a few seconds (a burst's results being
// checked, a busy process) sends its next request on a connection the server closed meanwhile: the request fails
// with `other side closed` or ECONNRESET, and nothing was executed. So the server keeps idle connections far longer
// than a client would (the convention of load balancers, which keep theirs 60 s: the server's timeout must be the
// longer one), and waits a little longer for a request's headers than for the next request. A listen backlog larger
// than Node's default of 511 lets a burst of new connections queue in the kernel instead of retrying their SYN a
// second later.
import type { ServerType } from '@hono/node-server';
import { createAdaptorServer } from '@hono/node-server';

/** Idle keep-alive connections are kept this long (longer than any client's idle timeout, so the client closes first). */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** Headers of a request must arrive within this (above KEEP_ALIVE_TIMEOUT_MS, as Node requires for keep-alive to hold). */
export const HEADERS_TIMEOUT_MS = 66_000;
/** Connections waiting to be accepted (the kernel caps it at net.core.somaxconn). */
export const LISTEN_BACKLOG = 4096;

/**
 * Serves `fetch` on `port` and `host`; resolves once it listens.
 * @example const server = await listen(app.fetch, { port: 4000, host: '127.0.0.1' })
 */
export async function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  at: { port: number; host: string },
): Promise<ServerType> {
  const server = createAdaptorServer({ fetch });
  const http = server as import('node:http').Server;
  http.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  http.headersTimeout = HEADERS_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: at.port, host: at.host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
