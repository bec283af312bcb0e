import { describe, expect, it } from 'vitest';
import { encodeOnce } from '../subscriptions/encode-once.js';

describe('encodeOnce', () => {
  it('sends every socket the same JSON as a plain stringify would, encoding the shared payload once', () => {
    const enc = encodeOnce();
    const payload = {
      data: { availabilityChanged: { sku: 'A"\\\u0001lu:1', available: 0, soldOut: true, version: 7 } },
    };
    const sent: string[] = [];
    const sockets = [1, 2, 3].map(() => ({ send: (d: string) => sent.push(d) }) as any);
    for (const s of sockets) enc.wrap(s);
    let stringified = 0;
    const spy = new Proxy(payload, { ownKeys: (t) => (stringified++, Reflect.ownKeys(t)) });
    sockets.forEach((s, i) => {
      const msg = { id: String(i), type: 'next', payload: enc.onNext(null, '', null, null, spy) };
      s.send(JSON.stringify(msg, enc.replacer));
    });
    expect(sent.map((d) => JSON.parse(d))).toEqual([0, 1, 2].map((i) => ({ id: String(i), type: 'next', payload })));
    expect(stringified).toBe(1);
  });

  it('leaves other messages alone', () => {
    const enc = encodeOnce();
    const msg = { type: 'connection_ack', payload: { a: 1 } };
    expect(JSON.stringify(msg, enc.replacer)).toBe(JSON.stringify(msg));
  });
});
