import { setMaxListeners } from 'node:events';
import { createPubSub, Repeater } from 'graphql-yoga';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import type { RedisClients } from './redis.js';

/** An availability event, exactly as emit_availability() wrote it into the outbox. */
export type AvailabilityEvent = { sku: string; available: number; soldOut: boolean; version: number; updatedAt: string };
/** An order-status event: the outbox payload plus the order as the API shows it, read once by the relay. */
export type OrderStatusEvent = { orderId: string; clientId: string; status: string; updatedAt: string; order: unknown };

type Topics = { availability: AvailabilityEvent; order_status: OrderStatusEvent };
export type Topic = keyof Topics;

export type LivePubSub = {
  /** resolves once the event is handed to the transport (Redis PUBLISH acknowledged); rejects if it was not */
  publish<T extends Topic>(topic: T, key: string, event: Topics[T]): Promise<void>;
  /** many events in one round trip (a Redis pipeline); rejects unless every one was accepted */
  publishMany(events: { [T in Topic]: { topic: T; key: string; event: Topics[T] } }[Topic][]): Promise<void>;
  subscribe<T extends Topic>(topic: T, key: string): AsyncIterable<Topics[T]> & AsyncIterator<Topics[T]>;
  /** events of several keys of one topic as one stream (e.g. availabilityChanged(skus)) */
  subscribeMany<T extends Topic>(topic: T, keys: string[]): AsyncIterable<Topics[T]>;
};

/**
 * In-process pubsub (graphql-yoga's createPubSub), or, given Redis, the same API on `@graphql-yoga/redis-event-target`
 * so an event published by any instance reaches subscribers on every instance. Channels are `<prefix><topic>:<key>`.
 * Each event is serialized once per PUBLISH and parsed once per receiving process, then shared by its local subscribers.
 */
export function createLivePubSub(opts: { redis?: RedisClients; prefix?: string } = {}): LivePubSub {
  const prefix = opts.redis?.prefix ?? opts.prefix ?? '';
  const redis = opts.redis;
  const eventTarget = redis
    ? createRedisEventTarget({
        // The event target fires SUBSCRIBE/UNSUBSCRIBE without awaiting: keep a refused command from becoming an
        // unhandled rejection (the subscriber connection queues them until Redis is back).
        subscribeClient: {
          on: (event: string, fn: (...args: any[]) => void) => redis.subscriber.on(event, fn),
          subscribe: (channel: string) => redis.subscriber.subscribe(channel).catch(() => 0),
          unsubscribe: (channel: string) => redis.subscriber.unsubscribe(channel).catch(() => 0),
        } as any,
        publishClient: redis.command,
      })
    : undefined;
  // In-process: a plain EventTarget, with no listener limit (thousands of subscribers on one hot SKU are normal).
  const localTarget = new EventTarget();
  setMaxListeners(0, localTarget);
  const pubsub = createPubSub<Record<string, [unknown]>>({ eventTarget: (eventTarget ?? localTarget) as any });
  const channel = (topic: Topic, key: string) => `${prefix}${topic}:${key}`;

  return {
    async publish(topic, key, event) {
      if (redis) {
        // awaited (the event target's dispatchEvent is fire-and-forget): the relay marks a row published only after this
        await redis.command.publish(channel(topic, key), JSON.stringify(event));
      } else {
        pubsub.publish(channel(topic, key), event);
      }
    },
    async publishMany(events) {
      if (!redis) {
        for (const e of events) pubsub.publish(channel(e.topic, e.key), e.event);
        return;
      }
      const pipe = redis.command.pipeline();
      for (const e of events) pipe.publish(channel(e.topic, e.key), JSON.stringify(e.event));
      const results = (await pipe.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed || results.length !== events.length) throw failed?.[0] ?? new Error('redis pipeline returned no results');
    },
    subscribe: (topic, key) => pubsub.subscribe(channel(topic, key)) as any,
    subscribeMany(topic, keys) {
      const unique = [...new Set(keys)];
      if (unique.length === 1) return pubsub.subscribe(channel(topic, unique[0]!)) as any;
      return Repeater.merge(unique.map((k) => pubsub.subscribe(channel(topic, k)))) as any;
    },
  };
}
