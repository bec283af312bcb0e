// One listener per channel, however many subscriptions watch it. Each subscription used to be one repeater and one
// EventTarget listener per SKU, merged (Repeater.merge): 2,000 subscriptions x 100 SKUs held ~760 MB of heap. Here a
// subscription is one repeater and one Set entry per channel it watches.
import { Repeater } from 'graphql-yoga';

type Sink = (event: unknown) => void;

/** Where events of a channel come from: told when a channel gets its first subscriber and loses its last. */
export type ChannelSource = { listen(channel: string): void; unlisten(channel: string): void };

/** What the fan-out holds right now: channels with subscribers, and (subscription, channel) pairs. */
export type FanoutStats = { channels: number; listeners: number; streams: number };

/**
 * A channel -> subscribers table. `deliver` hands one event object to every stream of its channel; `stream` is one
 * subscription over several channels, removed from every channel when it ends. A stream that falls `maxPending`
 * events behind (a client that does not read) is ended with an error instead of buffering without bound.
 * @example const f = channelFanout(); const s = f.stream(['availability:A', 'availability:B']); f.deliver('availability:A', e)
 */
export function channelFanout(source?: ChannelSource, maxPending = 1_000) {
  const sinks = new Map<string, Set<Sink>>();
  let listeners = 0;
  let streams = 0;

  function add(channel: string, sink: Sink) {
    let set = sinks.get(channel);
    if (!set) {
      sinks.set(channel, (set = new Set()));
      source?.listen(channel);
    }
    if (!set.has(sink)) listeners++;
    set.add(sink);
  }
  function remove(channel: string, sink: Sink) {
    const set = sinks.get(channel);
    if (!set?.delete(sink)) return;
    listeners--;
    if (set.size === 0) {
      sinks.delete(channel);
      source?.unlisten(channel);
    }
  }

  return {
    deliver(channel: string, event: unknown) {
      const set = sinks.get(channel);
      if (set) for (const sink of set) sink(event);
    },
    stream<T>(channels: string[]): Repeater<T> {
      return new Repeater<T>((push, stop) => {
        let pending = 0;
        const sink: Sink = (event) => {
          if (pending >= maxPending) return stop(new Error(`subscriber fell ${maxPending} events behind; resubscribe`));
          pending++;
          push(event as T).then(() => pending--, () => pending--);
        };
        streams++;
        for (const c of channels) add(c, sink);
        void stop.then(() => {
          streams--;
          for (const c of channels) remove(c, sink);
        });
      });
    },
    stats: (): FanoutStats => ({ channels: sinks.size, listeners, streams }),
  };
}
