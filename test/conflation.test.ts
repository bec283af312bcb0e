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
