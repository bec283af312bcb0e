import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { Repeater } from 'graphql-yoga';

type Subscribe = (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult> | AsyncIterable<ExecutionResult> | ExecutionResult;
type Group = {
  members: Set<{ push: (r: ExecutionResult) => unknown; end: () => void }>;
  iterator?: AsyncIterator<ExecutionResult>;
  /** the first subscribe's answer when it was not a stream (e.g. a validation or auth error) */
  result?: ExecutionResult;
  closed: boolean;
};

const isAsyncIterable = (x: unknown): x is AsyncIterable<ExecutionResult> => typeof (x as any)?.[Symbol.asyncIterator] === 'function';

/**
 * Runs each distinct subscription operation once and hands every result object to all of its subscribers, instead of
 * executing it once per subscriber: 2,000 shoppers on one product page cost one execution per event. Subscriptions
 * share only when `key` says they are the same operation with the same variables for the same API client (a result
 * may depend on who asks: orderStatusChanged filters by client).
 * @example const shared = shareSubscriptions(); const stream = await shared(args, `${query}|${vars}|${clientId}`, subscribe)
 */
export function shareSubscriptions() {
  const groups = new Map<string, Promise<Group>>();

  async function open(key: string, args: ExecutionArgs, subscribe: Subscribe): Promise<Group> {
    const source = await subscribe(args);
    const group: Group = { members: new Set(), closed: false };
    if (!isAsyncIterable(source)) {
      group.result = source;
      group.closed = true;
      return group;
    }
    const iterator = source[Symbol.asyncIterator]();
    group.iterator = iterator;
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await iterator.next();
          if (done) break;
          for (const m of group.members) m.push(value);
        }
      } catch {
        // the source failed: its subscribers end; their clients resubscribe
      } finally {
        close(key, group);
      }
    })();
    return group;
  }

  function close(key: string, group: Group) {
    if (group.closed) return;
    group.closed = true;
    void groups.get(key)?.then((g) => g === group && groups.get(key) && groups.delete(key));
    for (const m of group.members) m.end();
    void group.iterator?.return?.();
  }

  async function sharedSubscribe(args: ExecutionArgs, key: string, subscribe: Subscribe) {
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
    return new Repeater<ExecutionResult>((push, stop) => {
      const member = {
        push: (r: ExecutionResult) => {
          try {
            push(r).catch(() => {});
          } catch (err) {
            stop(err); // this subscriber stopped reading (its queue is full): it ends, the others go on
          }
        },
        end: () => stop(),
      };
      g.members.add(member);
      stop.then(() => {
        g.members.delete(member);
        if (g.members.size === 0) close(key, g);
      });
    });
  }

  /** the distinct operations running now (each one execution, however many subscribers) */
  return Object.assign(sharedSubscribe, { size: () => groups.size });
}
