import type { ExecutionArgs, ExecutionResult } from 'graphql';

type Subscribe = (
  args: ExecutionArgs,
) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult> | AsyncIterable<ExecutionResult> | ExecutionResult;
type Member = { push: (r: ExecutionResult, key: string | undefined) => unknown; end: () => void; swept: number };
type Group = {
  members: Set<Member>;
  iterator?: AsyncIterator<ExecutionResult>;
  /** the first subscribe's answer when it was not a stream (e.g. a validation or auth error) */
  result?: ExecutionResult;
  closed: boolean;
  /** the newest result per conflation key, with the sequence number it arrived at */
  latest: Map<string, { value: ExecutionResult; seq: number }>;
  seq: number;
  sweeping: boolean;
};

/**
 * How long a sweep writes before it lets the event loop turn (I/O in: a newer state, the relay's next rows, requests),
 * in milliseconds; checked every SWEEP_CHECK subscribers. Bounded by time, not by a count of subscribers, because a
 * socket write costs 10-30 us here depending on the load: the event loop waits at most about this long.
 */
export const SWEEP_SLICE_MS = 2;
const SWEEP_CHECK = 16;
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

const isAsyncIterable = (x: unknown): x is AsyncIterable<ExecutionResult> =>
  typeof (x as any)?.[Symbol.asyncIterator] === 'function';

/**
 * A result's conflation key, given the operation it came from: results with the same key replace each other while a
 * subscriber has not taken them; undefined: never conflated.
 */
export type ConflateKey = (result: ExecutionResult, args: ExecutionArgs) => string | undefined;

/** Results one subscriber may have waiting before it is ended as too slow (its client resubscribes). */
export const MAX_PENDING = 1024;

/**
 * Writes one result to a subscriber's socket itself (as its transport's `next` message) and calls `done` once the
 * socket has taken it, or can take nothing more (closed, failed). See `conflatingQueue`.
 */
export type ResultWriter = (result: ExecutionResult, done: () => void) => void;

/**
 * One subscriber's queue of results not yet taken. A result with a conflation key replaces the waiting result with
 * the same key, in its place: a subscriber that is behind gets the newest state, never a backlog of stale ones. A
 * result without a key (an order's status change) is never dropped: it waits its turn, up to MAX_PENDING results.
 *
 * Taken by one of two consumers. Without `write`, by whoever reads `iterator` (the transport's own loop: one promise
 * hop per result and per subscriber). With `write`, by the queue itself: a result is written to the socket as soon
 * as it is pushed, unless the socket has not taken the previous one yet (a subscriber that is behind), in which case
 * it waits, conflated, for that write's `done`. `iterator` then yields nothing and ends, once what is waiting has been
 * written, when the subscription ends (the transport sends its `complete` after every result).
 */
export function conflatingQueue(onDone: () => void, write?: ResultWriter) {
  const pending: { key: string | undefined; value: ExecutionResult }[] = [];
  let ended = false;
  let finished = false;
  let writing = false;
  let wake: (() => void) | undefined;
  const finish = () => {
    if (finished) return;
    finished = true;
    onDone();
  };
  // with `write`: the next waiting result once the socket took the last one (a closed socket calls done at once)
  const written = () => {
    const item = finished ? undefined : pending.shift();
    if (item) write!(item.value, written);
    else {
      writing = false;
      if (ended) wake?.();
    }
  };
  const member: Member = {
    swept: 0,
    /** `key`: the result's conflation key, computed once per result for every subscriber of its operation */
    push(value: ExecutionResult, key: string | undefined) {
      if (ended) return;
      if (write && !writing) {
        writing = true;
        write(value, written);
        return;
      }
      if (key !== undefined) {
        const waiting = pending.find((p) => p.key === key);
        if (waiting) {
          waiting.value = value;
          return;
        }
      }
      if (pending.length >= MAX_PENDING) {
        // this subscriber stopped reading: it ends (after what it has), the others go on
        ended = true;
      } else pending.push({ key, value });
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
  };
  const iterator: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      if (write) {
        // the results went out through `write`: this only tells the transport when the subscription is over
        while (!finished && !(ended && !writing && !pending.length)) await new Promise<void>((r) => (wake = r));
        wake = undefined;
        finish();
        return { value: undefined, done: true };
      }
      while (!pending.length && !ended) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      const item = pending.shift();
      if (item) return { value: item.value, done: false };
      finish();
      return { value: undefined, done: true };
    },
    async return() {
      ended = true;
      pending.length = 0;
      finish();
      wake?.(); // a next() waiting for a result ends too (the reader's loop finishes and lets go of its socket)
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { member, iterator };
}

/**
 * Runs each distinct subscription operation once and hands every result object to all of its subscribers, instead of
 * executing it once per subscriber: 2,000 shoppers on one product page cost one execution per event. Subscriptions
 * share only when `key` says they are the same operation with the same variables for the same API client (a result
 * may depend on who asks: orderStatusChanged filters by client). Each subscriber has its own queue
 * (`conflatingQueue`): results `conflateKey` gives a key for (availability, per SKU) are conflated while it is behind.
 * @example const shared = shareSubscriptions({ conflateKey }); const stream = await shared(args, `${query}|${vars}|${clientId}`, subscribe)
 */
export function shareSubscriptions(opts: { conflateKey?: ConflateKey } = {}) {
  const groups = new Map<string, Promise<Group>>();

  async function open(key: string, args: ExecutionArgs, subscribe: Subscribe): Promise<Group> {
    const source = await subscribe(args);
    const group: Group = { members: new Set(), closed: false, latest: new Map(), seq: 0, sweeping: false };
    if (!isAsyncIterable(source)) {
      group.result = source;
      group.closed = true;
      return group;
    }
    const iterator = source[Symbol.asyncIterator]();
    group.iterator = iterator;
    const conflateKey = opts.conflateKey;
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await iterator.next();
          if (done) break;
          const k = conflateKey?.(value, args);
          if (k === undefined) {
            for (const m of group.members) m.push(value, undefined);
            continue;
          }
          group.latest.set(k, { value, seq: ++group.seq });
          if (!group.sweeping) void sweep(group);
        }
      } catch {
        // the source failed: its subscribers end; their clients resubscribe
      } finally {
        close(key, group);
      }
    })();
    return group;
  }

  /**
   * Hands every subscriber of the group the newest state per key it has not had, SWEEP_SLICE_MS of writing per turn of
   * the event loop. A state that arrives mid-sweep goes to the subscribers not yet reached at once, and then to those
   * already swept: the last sale's count waits at most one pass over the subscribers, never a pass per stale state.
   */
  async function sweep(group: Group) {
    group.sweeping = true;
    try {
      for (let pushed = 1; pushed > 0 && !group.closed; ) {
        pushed = 0;
        let n = 0;
        let sliceStart = performance.now();
        for (const m of group.members) {
          if (m.swept >= group.seq) continue;
          for (const [k, e] of group.latest) if (e.seq > m.swept) m.push(e.value, k);
          m.swept = group.seq;
          pushed++;
          if (++n % SWEEP_CHECK === 0 && performance.now() - sliceStart >= SWEEP_SLICE_MS) {
            await nextTurn();
            sliceStart = performance.now();
          }
        }
      }
    } finally {
      group.sweeping = false;
    }
  }

  function close(key: string, group: Group) {
    if (group.closed) return;
    group.closed = true;
    void groups.get(key)?.then((g) => g === group && groups.get(key) && groups.delete(key));
    for (const m of group.members) m.end();
    void group.iterator?.return?.();
  }

  /** `write`: the subscriber's results are written to its socket by its queue (see conflatingQueue) */
  async function sharedSubscribe(args: ExecutionArgs, key: string, subscribe: Subscribe, write?: ResultWriter) {
    let group: Group | undefined;
    for (let attempt = 0; attempt < 2 && (!group || group.closed); attempt++) {
      let pending = groups.get(key);
      if (!pending || attempt > 0) {
        pending = open(key, args, subscribe);
        groups.set(key, pending);
        pending.catch(() => groups.get(key) === pending && groups.delete(key));
      }
      group = await pending;
      if (group.result) {
        if (groups.get(key) === pending) groups.delete(key);
        return group.result; // not a stream: nothing to share
      }
    }
    const g = group!;
    const { member, iterator } = conflatingQueue(() => {
      g.members.delete(member);
      if (g.members.size === 0) close(key, g);
    }, write);
    member.swept = g.seq; // from the next state on, as a subscriber that joins between events
    g.members.add(member);
    return iterator;
  }

  /** the distinct operations running now (each one execution, however many subscribers) */
  return Object.assign(sharedSubscribe, { size: () => groups.size });
}
