// `npm run bench:socket-floor`: what one small write to each of SOCKETS loopback TCP sockets costs this machine, with
// nothing of lastunit in the way: the floor under the fan-out bench (bench/fanout.ts), whose last pass is one
// graphql-ws `next` frame written to every subscriber's socket. A child process accepts SOCKETS connections and, ROUNDS
// times, writes one 150-byte WebSocket text frame to each; this process holds the other ends, as the fan-out bench's
// subscribers do, and reads them. Prints per round: the write loop's time (us per socket) and when the last socket
// had its frame here (ms after the loop began). 127.0.0.1 only; bounded: ROUNDS x SOCKETS frames, at most 60 s.
// Env: SOCKETS (10000), ROUNDS (5).
import { fork, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const PAYLOAD =
  '{"id":"1","type":"next","payload":{"data":{"availabilityChanged":{"available":0,"version":51,"updatedAt":"2026-12-01T19:50:16.215081+00:00"}}}}';
/** one unmasked WebSocket text frame (server to client), as ws writes it */
const FRAME = Buffer.concat([
  Buffer.from([0x81, 126, Buffer.byteLength(PAYLOAD) >> 8, Buffer.byteLength(PAYLOAD) & 0xff]),
  Buffer.from(PAYLOAD),
]);

type FromServer = { listening: number } | { round: number; startedAt: number; writeMs: number };

/** The writing side: accepts `sockets` connections, then writes one frame to each, `rounds` times, 300 ms apart. */
function serve(sockets: number, rounds: number) {
  const accepted: net.Socket[] = [];
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    s.on('error', () => {});
    accepted.push(s);
    if (accepted.length === sockets) void write();
  });
  async function write() {
    for (let round = 0; round < rounds; round++) {
      await new Promise((r) => setTimeout(r, 300));
      const startedAt = Date.now();
      const t = performance.now();
      for (const s of accepted) s.write(FRAME);
      process.send!({ round, startedAt, writeMs: performance.now() - t } satisfies FromServer);
    }
  }
  server.listen(0, '127.0.0.1', () => process.send!({ listening: (server.address() as net.AddressInfo).port }));
}

export type FloorRound = { round: number; usPerWrite: number; lastReceivedMs: number };

/**
 * Runs the floor measurement and returns one line per round.
 * @example const rounds = await socketFloor(10_000, 5)
 */
export async function socketFloor(sockets: number, rounds: number): Promise<FloorRound[]> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, SOCKET_FLOOR_ROLE: 'server', SOCKETS: String(sockets), ROUNDS: String(rounds) },
    execArgv: process.execArgv,
  });
  // bounded: the writer is killed after 60 s, and every wait below ends by then (its exit rejects it)
  const deadline = Date.now() + 60_000;
  const timeout = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`the writing process exited (${code ?? signal})`))),
  );
  exited.catch(() => {});
  try {
    const port = await Promise.race([
      exited,
      new Promise<number>((resolve) =>
        child.on('message', (m: FromServer) => 'listening' in m && resolve(m.listening)),
      ),
    ]);
    // per round: when this side last received a frame of it (every socket gets one frame per round)
    const received = new Map<number, { n: number; last: number }>();
    const perSocket: number[] = [];
    const clients: net.Socket[] = [];
    for (let i = 0; i < sockets; i += 500) {
      const batch = Array.from(
        { length: Math.min(500, sockets - i) },
        (_, j) =>
          new Promise<void>((resolve, reject) => {
            const id = i + j;
            perSocket[id] = 0;
            const c = net.connect(port, '127.0.0.1', () => resolve());
            c.on('error', reject);
            c.on('data', (d) => {
              const at = Date.now();
              for (let k = 0; k < Math.max(1, Math.round(d.length / FRAME.length)); k++) {
                const round = perSocket[id]!++;
                const r = received.get(round) ?? { n: 0, last: 0 };
                r.n++;
                r.last = Math.max(r.last, at);
                received.set(round, r);
              }
            });
            clients.push(c);
          }),
      );
      await Promise.all(batch);
    }
    const out: FloorRound[] = [];
    const allReceived = new Promise<void>((resolve, reject) => {
      child.on('message', (m: FromServer) => {
        if (!('round' in m)) return;
        const { round, startedAt, writeMs } = m;
        const check = () => {
          const r = received.get(round);
          if (r && r.n === sockets) {
            out.push({ round, usPerWrite: (1000 * writeMs) / sockets, lastReceivedMs: r.last - startedAt });
            if (out.length === rounds) resolve();
          } else if (Date.now() > deadline)
            reject(new Error(`round ${round}: ${r?.n ?? 0} of ${sockets} frames arrived`));
          else setTimeout(check, 5);
        };
        check();
      });
    });
    // the writer exits only when killed or failed: before every round arrived, that ends the run
    await Promise.race([exited, allReceived]);
    for (const c of clients) c.destroy();
    return out.sort((a, b) => a.round - b.round);
  } finally {
    clearTimeout(timeout);
    child.kill();
  }
}

if (process.env.SOCKET_FLOOR_ROLE === 'server') {
  serve(Number(process.env.SOCKETS), Number(process.env.ROUNDS));
} else if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sockets = Number(process.env.SOCKETS ?? 10_000);
  const rounds = Number(process.env.ROUNDS ?? 5);
  if (!Number.isInteger(sockets) || sockets < 1 || !Number.isInteger(rounds) || rounds < 1 || rounds > 50)
    throw new Error('SOCKETS must be a positive integer and ROUNDS 1-50');
  socketFloor(sockets, rounds).then(
    (rs) => {
      console.log(`loopback TCP: one ${FRAME.length}-byte frame to each of ${sockets} sockets, ${rounds} rounds`);
      for (const r of rs)
        console.log(
          `  round ${r.round}: write loop ${r.usPerWrite.toFixed(1)} us per socket (${((r.usPerWrite * sockets) / 1000).toFixed(0)} ms), ` +
            `last frame received ${r.lastReceivedMs} ms after the loop began`,
        );
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
