// A local stand-in for Neon's WebSocket proxy: each WebSocket the Neon driver opens becomes one TCP connection to the
// real PostgreSQL. Plain ws (no TLS), 127.0.0.1 only. It counts connections and client messages, so a test can prove
// that a cached answer never reached the database.
import net from 'node:net';
import { WebSocketServer } from 'ws';

export type WsBridge = {
  port: number;
  hostPort: string;
  stats: { connections: number; messages: number };
  close: () => Promise<void>;
};

/**
 * @param target the PostgreSQL to connect to; the driver's `?address=host:port` must name it (anything else is refused)
 * @example const bridge = await startWsBridge({ host: '127.0.0.1', port: 5432 })
 */
export async function startWsBridge(target: { host: string; port: number }): Promise<WsBridge> {
  const stats = { connections: 0, messages: 0 };
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  const sockets = new Set<net.Socket>();
  wss.on('connection', (ws, req) => {
    const address = new URL(req.url ?? '/', 'http://bridge').searchParams.get('address');
    const [host, port] = (address ?? '').split(':');
    if (Number(port) !== target.port || !['127.0.0.1', 'localhost', target.host].includes(host ?? '')) {
      ws.close(1008, `address ${address} is not the test database`);
      return;
    }
    stats.connections++;
    const tcp = net.connect(target.port, target.host);
    sockets.add(tcp);
    const pending: Buffer[] = [];
    let open = false;
    tcp.on('connect', () => {
      open = true;
      for (const b of pending.splice(0)) tcp.write(b);
    });
    tcp.on('data', (d) => ws.readyState === ws.OPEN && ws.send(d));
    tcp.on('close', () => {
      sockets.delete(tcp);
      ws.close();
    });
    tcp.on('error', () => ws.terminate());
    ws.on('message', (data) => {
      stats.messages++;
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (open) tcp.write(buf);
      else pending.push(buf);
    });
    ws.on('close', () => tcp.end());
    ws.on('error', () => tcp.destroy());
  });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const port = (wss.address() as net.AddressInfo).port;
  return {
    port,
    hostPort: `127.0.0.1:${port}`,
    stats,
    close: async () => {
      for (const s of sockets) s.destroy();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
