// Redis SUBSCRIBE/UNSUBSCRIBE for the topic fan-out, many topics per command, so a burst of subscriptions opening or
// closing costs a few commands rather than one per (subscription, SKU) pair. On Redis a topic is a pubsub channel name.
import type { TopicSource } from './topic-fanout.js';

/** The two commands of a Redis connection in subscriber mode (an ioredis client), each taking many topics. */
export type SubscriberClient = {
  subscribe(...topics: string[]): Promise<unknown>;
  unsubscribe(...topics: string[]): Promise<unknown>;
};

/** Topics per SUBSCRIBE or UNSUBSCRIBE command: one reply per topic comes back either way. */
export const TOPICS_PER_COMMAND = 1_000;

/**
 * A TopicSource on a Redis subscriber connection that gathers the topics gained and lost in one turn of the event
 * loop and sends them as a few SUBSCRIBE / UNSUBSCRIBE commands of up to `perCommand` topics each. A topic gained
 * and lost within the same turn costs no command. `unacknowledged()` is the number of topics sent and not yet
 * answered by Redis (or still to be sent): until it is 0, the client still holds those commands.
 * Commands are not awaited by the caller: a refused one must not become an unhandled rejection (the subscriber
 * connection queues commands until Redis is back, and ioredis re-subscribes every topic after a reconnect).
 * @example const source = redisTopicSource(redis.subscriber); const fanout = topicFanout(source)
 */
export function redisTopicSource(
  client: SubscriberClient,
  perCommand = TOPICS_PER_COMMAND,
): TopicSource & { unacknowledged(): number } {
  // net change of this turn per topic: true = to SUBSCRIBE, false = to UNSUBSCRIBE. The fan-out alternates listen
  // and unlisten for a topic (first subscriber, last one gone), so a second change cancels the first.
  const changes = new Map<string, boolean>();
  let inFlight = 0;
  let scheduled = false;

  const send = (command: 'subscribe' | 'unsubscribe', topics: string[]) => {
    for (let i = 0; i < topics.length; i += perCommand) {
      const batch = topics.slice(i, i + perCommand);
      inFlight += batch.length;
      void client[command](...batch)
        .catch(() => 0)
        .finally(() => (inFlight -= batch.length));
    }
  };
  const flush = () => {
    scheduled = false;
    const subscribe: string[] = [];
    const unsubscribe: string[] = [];
    for (const [topic, on] of changes) (on ? subscribe : unsubscribe).push(topic);
    changes.clear();
    if (unsubscribe.length) send('unsubscribe', unsubscribe);
    if (subscribe.length) send('subscribe', subscribe);
  };
  const change = (topic: string, on: boolean) => {
    if (changes.get(topic) === !on) changes.delete(topic);
    else changes.set(topic, on);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  return {
    listen: (topic) => change(topic, true),
    unlisten: (topic) => change(topic, false),
    unacknowledged: () => inFlight + changes.size,
  };
}
