// Fan-out conflation (docs/live.md): a subscriber that is behind gets the newest availability per SKU, never a
// backlog; order-status events are never conflated. Driven through the shared execution every graphql-ws
// subscription runs on, with the real schema's documents for the conflation keys.
import { describe, expect, it } from 'vitest';
import { parse, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { shareSubscriptions, MAX_PENDING } from '../subscriptions/shared-execution.js';
import { availabilityKey } from '../subscriptions/graphql-ws.js';
import { schema } from '../schema/index.js';

/** A source the test pushes into: what graphql-js's subscribe would hand the shared execution, event by event. */
function source() {
  const queue: ExecutionResult[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const iterable: AsyncIterable<ExecutionResult> = {
    [Symbol.asyncIterator]: () => ({
      async next() {
        while (!queue.length && !done) await new Promise<void>((r) => (wake = r));
        return queue.length ? { value: queue.shift()!, done: false } : { value: undefined, done: true };
      },
      async return() {
        done = true;
        return { value: undefined, done: true };
      },
    }),
  };
  return {
    iterable,
    push: (r: ExecutionResult) => {
      queue.push(r);
      wake?.();
    },
    /** the source ends after what it has handed out */
    end: () => {
      done = true;
      wake?.();
    },
  };
}
const settle = () => new Promise((r) => setTimeout(r, 20));
const args = (query: string, variableValues?: Record<string, unknown>): ExecutionArgs => ({
  schema,
  document: parse(query),
  variableValues,
});
const avail = (sku: string, available: number, withSku = true) => ({
  data: { availabilityChanged: { ...(withSku ? { sku } : {}), available, version: 100 - available } },
});
const status = (orderId: string, s: string) => ({ data: { orderStatusChanged: { id: orderId, status: s } } });

async function take(it: AsyncIterator<ExecutionResult>, n: number) {
  const out: ExecutionResult[] = [];
  for (let i = 0; i < n; i++) out.push((await it.next()).value);
  return out;
}

describe('fan-out conflation', () => {
  it('hands a subscriber that is behind only the newest availability per SKU, in place', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($s: [String!]!) { availabilityChanged(skus: $s) { sku available version } }', {
      s: ['A', 'B'],
    });
    const slow = (await shared(op, 'k', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    const fast = (await shared(op, 'k', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    const fastSeen: ExecutionResult[] = [];
    const reading = (async () => {
      for await (const r of fast) {
        fastSeen.push(r);
        if (fastSeen.length === 100) break;
      }
    })();
    for (let left = 49; left >= 0; left--) {
      src.push(avail('A', left));
      src.push(avail('B', left));
      await settle(); // the fast reader keeps up: it sees every event
    }
    await reading;
    expect(fastSeen).toHaveLength(100);
    // the slow one never read: it has one result per SKU waiting, each the newest
    expect(await take(slow, 2)).toEqual([avail('A', 0), avail('B', 0)]);
    src.push(avail('A', 0));
    expect(await take(slow, 1)).toEqual([avail('A', 0)]);
    await slow.return!();
  });

  it('conflates a one-SKU subscription whose results do not name the SKU', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription { availabilityChanged(skus: ["ONE"]) { available version } }');
    const slow = (await shared(op, 'k1', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    for (let left = 9; left >= 0; left--) src.push(avail('ONE', left, false));
    await settle();
    expect(await take(slow, 1)).toEqual([avail('ONE', 0, false)]);
    await slow.return!();
  });

  it('never conflates order-status events: a subscriber that is behind gets every one, in order', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }', { id: 'o1' });
    const slow = (await shared(op, 'k2', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    const steps = ['RESERVED', 'AWAITING_PAYMENT', 'PAID', 'FULFILLED', 'RESERVED'];
    for (const s of steps) src.push(status('o1', s));
    await settle();
    expect(await take(slow, steps.length)).toEqual(steps.map((s) => status('o1', s)));
    await slow.return!();
  });

  it('does not conflate availability of several SKUs when the results cannot tell them apart', async () => {
    const op = args('subscription { availabilityChanged(skus: ["X", "Y"]) { available } }');
    expect(availabilityKey(avail('X', 1, false), op)).toBeUndefined();
    expect(availabilityKey(avail('X', 1), op)).toBe('availability:X');
    expect(availabilityKey(status('o', 'PAID'), op)).toBeUndefined();
  });

  it('ends a subscriber that lets more than MAX_PENDING unconflatable events pile up, the others go on', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }', { id: 'o2' });
    const slow = (await shared(op, 'k3', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    const fast = (await shared(op, 'k3', () => src.iterable)) as AsyncIterableIterator<ExecutionResult>;
    const fastSeen: ExecutionResult[] = [];
    const total = MAX_PENDING + 2; // MAX_PENDING + 1 that end the slow one, then one pushed after it ended
    const reading = (async () => {
      for await (const r of fast) {
        fastSeen.push(r);
        if (fastSeen.length === total) break;
      }
    })();
    for (let i = 0; i <= MAX_PENDING; i++) {
      src.push(status('o2', `S${i}`));
      if (i % 16 === 0) await settle(); // the fast one reads as it goes
    }
    await settle();
    const got: ExecutionResult[] = [];
    for await (const r of slow) got.push(r);
    expect(got).toHaveLength(MAX_PENDING); // what it had, then the end: its client resubscribes
    src.push(status('o2', 'AFTER'));
    await reading;
    const expected = [
      ...Array.from({ length: MAX_PENDING + 1 }, (_, i) => status('o2', `S${i}`)),
      status('o2', 'AFTER'),
    ];
    expect(fastSeen).toEqual(expected);
  });
});

/**
 * A socket as the shared execution's writer sees it: it records what it was handed, and takes (calls `done`) only
 * when the test lets it, as a socket whose kernel buffer is full would.
 */
function slowSocket() {
  const written: ExecutionResult[] = [];
  const waiting: (() => void)[] = [];
  return {
    written,
    write: (result: ExecutionResult, done: () => void) => {
      written.push(result);
      waiting.push(done);
    },
    /** the socket takes what it was handed (the next waiting result is written then) */
    drain: () => {
      for (const done of waiting.splice(0)) done();
    },
    busy: () => waiting.length > 0,
  };
}

describe('fan-out written by the queue to the socket (graphql-ws)', () => {
  it('writes at once to a socket that keeps up, and conflates what waits for one that does not', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($s: [String!]!) { availabilityChanged(skus: $s) { sku available version } }', {
      s: ['A', 'B'],
    });
    // a socket that takes each write at once (ws calls back once the kernel has the bytes)
    const fast = { written: [] as ExecutionResult[] };
    const takes = (r: ExecutionResult, done: () => void) => {
      fast.written.push(r);
      queueMicrotask(done);
    };
    const slow = slowSocket();
    const fastIt = (await shared(op, 'w1', () => src.iterable, takes)) as AsyncIterableIterator<ExecutionResult>;
    const slowIt = (await shared(op, 'w1', () => src.iterable, slow.write)) as AsyncIterableIterator<ExecutionResult>;
    for (let left = 9; left >= 0; left--) {
      src.push(avail('A', left));
      src.push(avail('B', left));
      await settle();
    }
    expect(fast.written).toEqual(Array.from({ length: 10 }, (_, i) => [avail('A', 9 - i), avail('B', 9 - i)]).flat());
    // the slow socket took nothing: its first write, then per SKU one result waiting in its place (B came first),
    // each replaced by the newest; one write per time the socket takes one
    expect(slow.written).toEqual([avail('A', 9)]);
    slow.drain();
    expect(slow.written).toEqual([avail('A', 9), avail('B', 0)]);
    slow.drain();
    expect(slow.written).toEqual([avail('A', 9), avail('B', 0), avail('A', 0)]);
    slow.drain();
    expect(slow.busy()).toBe(false);
    await Promise.all([fastIt.return!(), slowIt.return!()]);
  });

  it('writes every order-status event in order to a socket that is behind, and completes only after the last', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }', { id: 'w2' });
    const sock = slowSocket();
    const it = (await shared(op, 'w2', () => src.iterable, sock.write)) as AsyncIterableIterator<ExecutionResult>;
    let completed = false;
    const finished = it.next().then((r) => {
      completed = true;
      return r;
    });
    const steps = ['RESERVED', 'AWAITING_PAYMENT', 'PAID', 'FULFILLED'];
    for (const s of steps) src.push(status('w2', s));
    src.end(); // the source ends (the server stops): what is waiting is still written, then graphql-ws completes
    await settle();
    expect(sock.written).toEqual([status('w2', 'RESERVED')]);
    for (let i = 1; i < steps.length; i++) {
      expect(completed).toBe(false);
      sock.drain();
      await settle();
    }
    expect(sock.written).toEqual(steps.map((s) => status('w2', s)));
    expect(completed).toBe(false); // the last write is not taken yet
    sock.drain();
    expect(await finished).toEqual({ value: undefined, done: true });
  });

  it('writes nothing more once graphql-ws returns the subscription (the client completed it)', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }', { id: 'w3' });
    const gone = slowSocket();
    const stays = slowSocket();
    const goneIt = (await shared(op, 'w3', () => src.iterable, gone.write)) as AsyncIterableIterator<ExecutionResult>;
    const staysIt = (await shared(op, 'w3', () => src.iterable, stays.write)) as AsyncIterableIterator<ExecutionResult>;
    src.push(status('w3', 'RESERVED'));
    src.push(status('w3', 'PAID'));
    await settle();
    expect(await goneIt.return!()).toEqual({ value: undefined, done: true });
    gone.drain(); // its write in flight is taken after the return: the waiting PAID is dropped, not written
    stays.drain();
    src.push(status('w3', 'FULFILLED'));
    await settle();
    stays.drain();
    expect(gone.written).toEqual([status('w3', 'RESERVED')]);
    expect(stays.written).toEqual(['RESERVED', 'PAID', 'FULFILLED'].map((s) => status('w3', s)));
    await staysIt.return!();
  });

  it('ends a subscriber whose socket takes nothing after MAX_PENDING waiting events; the others go on', async () => {
    const shared = shareSubscriptions({ conflateKey: availabilityKey });
    const src = source();
    const op = args('subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }', { id: 'w4' });
    const stuck = slowSocket();
    const fast = slowSocket();
    const stuckIt = (await shared(op, 'w4', () => src.iterable, stuck.write)) as AsyncIterableIterator<ExecutionResult>;
    const fastIt = (await shared(op, 'w4', () => src.iterable, fast.write)) as AsyncIterableIterator<ExecutionResult>;
    const total = MAX_PENDING + 3; // one written, MAX_PENDING waiting, one that ends it, one after it ended
    for (let i = 0; i < total; i++) {
      src.push(status('w4', `S${i}`));
      await new Promise((r) => setImmediate(r));
      fast.drain();
    }
    await settle();
    expect(fast.written).toEqual(Array.from({ length: total }, (_, i) => status('w4', `S${i}`)));
    let ended = false;
    const end = stuckIt.next().then((r) => {
      ended = true;
      return r;
    });
    expect(stuck.written).toHaveLength(1);
    for (let i = 0; i < MAX_PENDING; i++) stuck.drain();
    await settle();
    expect(stuck.written).toEqual(Array.from({ length: MAX_PENDING + 1 }, (_, i) => status('w4', `S${i}`)));
    expect(ended).toBe(false);
    stuck.drain();
    expect(await end).toEqual({ value: undefined, done: true }); // its client resubscribes
    await fastIt.return!();
  });
});
