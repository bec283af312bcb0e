// Test-only (LASTUNIT_TEST_DIAGNOSTICS=on, never in production): what the process holds, for tests that must see the
// server's own memory come back after a load (test/ws-bounds.test.ts). Run the host with --expose-gc for a heap
// figure after a full collection (the live set), not whatever garbage the collector has not yet reclaimed.
import { Hono } from 'hono';
import type { LivePubSub } from '../subscriptions/pubsub.js';

export function diagnosticsRoute(deps: { pubsub: LivePubSub; sockets: () => Record<string, number> }) {
  const app = new Hono();
  app.get('/__diagnostics', (c) => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc) for (let i = 0; i < 3; i++) gc(); // weak references and finalizers can take more than one pass
    const m = process.memoryUsage();
    return c.json({
      gcForced: !!gc,
      heapUsedBytes: m.heapUsed,
      rssBytes: m.rss,
      pubsub: deps.pubsub.stats(),
      graphqlWs: deps.sockets(),
    });
  });
  return app;
}
