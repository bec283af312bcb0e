// A small TCP endpoint in front of a database, for drills and tests: what a managed service's DNS name or a Patroni VIP
// is to the API (and, with a delay, a slow replication link). It forwards to the current target; `cut()` drops every connection and refuses new ones (the primary
// is gone), `moveTo()` points it at another server (the promoted standby) and accepts again.
import net from 'node:net';

export type TcpProxy = {
  port: number;
  /** the target connections go to now */
  target: () => { host: string; port: number };
  /** closes every open connection and answers new ones by closing them, until moveTo() or resume() */
  cut: () => void;
  /** forwards new connections to `to` (open ones stay where they are unless `cut()` came first) */
  moveTo: (to: { host: string; port: number }) => void;
  resume: () => void;
  close: () => Promise<void>;
};

/**
 * Listens on 127.0.0.1 (a free port unless `port`) and forwards every connection to `to`.
 * @example const ep = await startTcpProxy({ host: '127.0.0.1', port: 5432 }); ep.cut(); ep.moveTo(standby)
 */
export async function startTcpProxy(
  to: { host: string; port: number },
  port = 0,
  opts: { delayDownstreamMs?: number } = {},
): Promise<TcpProxy> {
  let target = to;
  let down = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    client.pipe(upstream);
    const delay = opts.delayDownstreamMs ?? 0;
    // a constant delay keeps the bytes in order (timers of one delay fire in the order they were set)
    if (delay > 0) upstream.on('data', (d: Buffer) => setTimeout(() => client.writable && client.write(d), delay));
    else upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    target: () => target,
    cut: () => {
      down = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    moveTo: (next) => {
      target = next;
      down = false;
    },
    resume: () => {
      down = false;
    },
    close: async () => {
      down = true;
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
