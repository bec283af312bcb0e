// The pubsub subscriptions listen on: in-process, or on Redis so every instance hears every instance's events.
import type { RedisClients } from './redis.js';
import { topicFanout, type FanoutStats } from './topic-fanout.js';
import { redisTopicSource } from './redis-topics.js';
import type { AvailabilityEvent, DropEntryEvent, OrderStatusEvent } from '../db/outbox-store.js';

/** The events of the outbox as the relay reads them (db/outbox-store.ts). */
export type { AvailabilityEvent, DropEntryEvent, OrderStatusEvent };

type Topics = { availability: AvailabilityEvent; order_status: OrderStatusEvent; drop_entry: DropEntryEvent };
export type Topic = keyof Topics;

export type LivePubSub = {
  /** resolves once the event is handed to the transport (Redis PUBLISH acknowledged); rejects if it was not */
  publish<T extends Topic>(topic: T, key: string, event: Topics[T]): Promise<void>;
  /** many events in one round trip (a Redis pipeline); rejects unless every one was accepted */
  publishMany(events: { [T in Topic]: { topic: T; key: string; event: Topics[T] } }[Topic][]): Promise<void>;
  subscribe<T extends Topic>(topic: T, key: string): AsyncIterable<Topics[T]> & AsyncIterator<Topics[T]>;
  /** events of several keys of one topic as one stream (e.g. availabilityChanged(skus)) */
  subscribeMany<T extends Topic>(topic: T, keys: string[]): AsyncIterable<Topics[T]>;
  /**
   * what this process holds for its subscribers (diagnostics; the memory test reads it), and `unacknowledged`: topics
   * whose SUBSCRIBE or UNSUBSCRIBE Redis has not answered yet (0 without Redis)
   */
  stats(): FanoutStats & { unacknowledged: number };
};

/**
 * In-process pubsub, or, given Redis, the same API on Redis pubsub so an event published by any instance reaches
 * subscribers on every instance. Each (topic, key) is a topic of its own, `<prefix><topic>:<key>` (on Redis, the
 * channel name PUBLISH and SUBSCRIBE take). Either way each topic has one listener in this process (subscribed on Redis
 * many topics per command: redis-topics.ts), fanned out to its local subscriptions (topic-fanout.ts); each event is
 * serialized once per PUBLISH and parsed once per receiving process, then shared by its local subscribers.
 */
export function createLivePubSub(opts: { redis?: RedisClients; prefix?: string } = {}): LivePubSub {
  const prefix = opts.redis?.prefix ?? opts.prefix ?? '';
  const redis = opts.redis;
  // SUBSCRIBE/UNSUBSCRIBE many topics per command, gathered per turn of the event loop (redis-topics.ts)
  const source = redis && redisTopicSource(redis.subscriber);
  const fanout = topicFanout(source);
  redis?.subscriber.on('message', (topic: string, message: string) => {
    let event: unknown;
    try {
      event = JSON.parse(message);
    } catch {
      return; // not ours: every publisher on these topics writes JSON
    }
    fanout.deliver(topic, event);
  });
  const topicOf = (topic: Topic, key: string) => `${prefix}${topic}:${key}`;

  return {
    async publish(topic, key, event) {
      // awaited on Redis: the relay marks a row published only after PUBLISH was acknowledged
      if (redis) await redis.command.publish(topicOf(topic, key), JSON.stringify(event));
      else fanout.deliver(topicOf(topic, key), event);
    },
    async publishMany(events) {
      if (!redis) {
        for (const e of events) fanout.deliver(topicOf(e.topic, e.key), e.event);
        return;
      }
      const pipe = redis.command.pipeline();
      for (const e of events) pipe.publish(topicOf(e.topic, e.key), JSON.stringify(e.event));
      const results = (await pipe.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed || results.length !== events.length)
        throw failed?.[0] ?? new Error('redis pipeline returned no results');
    },
    subscribe: <T extends Topic>(topic: T, key: string) => fanout.stream<Topics[T]>([topicOf(topic, key)]),
    subscribeMany: <T extends Topic>(topic: T, keys: string[]) =>
      fanout.stream<Topics[T]>([...new Set(keys)].map((k) => topicOf(topic, k))),
    stats: () => ({ ...fanout.stats(), unacknowledged: source?.unacknowledged() ?? 0 }),
  };
}
