// One listener per pubsub topic in this process, however many subscriptions watch it: a subscription is one repeater
// and one Set entry per topic it watches, and each event object is handed to every local subscriber of its topic.
import { Repeater } from 'graphql-yoga';

type Sink = (event: unknown) => void;

/** Where events of a topic come from: told when a topic gets its first subscriber and loses its last. */
export type TopicSource = { listen(topic: string): void; unlisten(topic: string): void };

/** What the fan-out holds right now: topics with subscribers, and (subscription, topic) pairs. */
export type FanoutStats = { topics: number; listeners: number; streams: number };

/**
 * A topic -> subscribers table. `deliver` hands one event object to every stream of its topic; `stream` is one
 * subscription over several topics, removed from every topic when it ends. A stream that falls `maxPending`
 * events behind (a client that does not read) is ended with an error instead of buffering without bound.
 * @example const f = topicFanout(); const s = f.stream(['availability:A', 'availability:B']); f.deliver('availability:A', e)
 */
export function topicFanout(source?: TopicSource, maxPending = 1_000) {
  const sinks = new Map<string, Set<Sink>>();
  let listeners = 0;
  let streams = 0;

  function add(topic: string, sink: Sink) {
    let set = sinks.get(topic);
    if (!set) {
      sinks.set(topic, (set = new Set()));
      source?.listen(topic);
    }
    if (!set.has(sink)) listeners++;
    set.add(sink);
  }
  function remove(topic: string, sink: Sink) {
    const set = sinks.get(topic);
    if (!set?.delete(sink)) return;
    listeners--;
    if (set.size === 0) {
      sinks.delete(topic);
      source?.unlisten(topic);
    }
  }

  return {
    deliver(topic: string, event: unknown) {
      const set = sinks.get(topic);
      if (set) for (const sink of set) sink(event);
    },
    stream<T>(topics: string[]): Repeater<T> {
      return new Repeater<T>((push, stop) => {
        let pending = 0;
        const sink: Sink = (event) => {
          if (pending >= maxPending) return stop(new Error(`subscriber fell ${maxPending} events behind; resubscribe`));
          pending++;
          push(event as T).then(
            () => pending--,
            () => pending--,
          );
        };
        streams++;
        for (const t of topics) add(t, sink);
        void stop.then(() => {
          streams--;
          for (const t of topics) remove(t, sink);
        });
      });
    },
    stats: (): FanoutStats => ({ topics: sinks.size, listeners, streams }),
  };
}
