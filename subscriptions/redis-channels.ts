// Redis SUBSCRIBE/UNSUBSCRIBE for the channel fan-out, many channels per command. One command per channel (as it was)
// meant one ioredis Command (a promise, its callbacks, an args array: ~1 KB of heap) per (subscription, SKU) pair
// until Redis answered it: closing 2,000 subscriptions x 100 SKUs queued 200,000 UNSUBSCRIBE commands, ~160 MB of
// heap held for seconds after the sockets had gone (a heap snapshot showed them in the subscriber's commandQueue).
import type { ChannelSource } from './channel-fanout.js';

/** The two commands of a Redis connection in subscriber mode (an ioredis client), each taking many channels. */
export type SubscriberClient = {
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
};

/** Channels per SUBSCRIBE or UNSUBSCRIBE command: one reply per channel comes back either way. */
export const CHANNELS_PER_COMMAND = 1_000;

/**
 * A ChannelSource on a Redis subscriber connection that gathers the channels gained and lost in one turn of the event
 * loop and sends them as a few SUBSCRIBE / UNSUBSCRIBE commands of up to `perCommand` channels each. A channel gained
 * and lost within the same turn costs no command. `unacknowledged()` is the number of channels sent and not yet
 * answered by Redis (or still to be sent): until it is 0, the client still holds those commands.
 * Commands are not awaited by the caller: a refused one must not become an unhandled rejection (the subscriber
 * connection queues commands until Redis is back, and ioredis re-subscribes every channel after a reconnect).
 * @example const source = redisChannelSource(redis.subscriber); const fanout = channelFanout(source)
 */
export function redisChannelSource(client: SubscriberClient, perCommand = CHANNELS_PER_COMMAND): ChannelSource & { unacknowledged(): number } {
  // net change of this turn per channel: true = to SUBSCRIBE, false = to UNSUBSCRIBE. The fan-out alternates listen
  // and unlisten for a channel (first subscriber, last one gone), so a second change cancels the first.
  const changes = new Map<string, boolean>();
  let inFlight = 0;
  let scheduled = false;

  const send = (command: 'subscribe' | 'unsubscribe', channels: string[]) => {
    for (let i = 0; i < channels.length; i += perCommand) {
      const batch = channels.slice(i, i + perCommand);
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
    for (const [channel, on] of changes) (on ? subscribe : unsubscribe).push(channel);
    changes.clear();
    if (unsubscribe.length) send('unsubscribe', unsubscribe);
    if (subscribe.length) send('subscribe', subscribe);
  };
  const change = (channel: string, on: boolean) => {
    if (changes.get(channel) === !on) changes.delete(channel);
    else changes.set(channel, on);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  return {
    listen: (channel) => change(channel, true),
    unlisten: (channel) => change(channel, false),
    unacknowledged: () => inFlight + changes.size,
  };
}
