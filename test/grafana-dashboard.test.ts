// docs/grafana-dashboard.json (docs/operations.md) read as Grafana imports it: a dashboard with a Prometheus datasource
// variable and panels on a 24-column grid, each query a PromQL expression; every metric a query names is one the server
// exports, read from GET /metrics of a started server (a renamed or removed metric fails here, not on the wall screen).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from './support/app.js';

type Panel = {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; legendFormat?: string }[];
};
const dashboard = JSON.parse(readFileSync('docs/grafana-dashboard.json', 'utf8')) as {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: string }[] };
  panels: Panel[];
};

// PromQL's functions, aggregations and keywords: every other bare name in an expression is a metric.
const PROMQL_WORDS = new Set(
  'sum min max avg count stddev stdvar topk bottomk quantile count_values group by without on ignoring group_left group_right bool and or unless offset rate irate increase delta idelta deriv histogram_quantile time vector scalar abs ceil floor round clamp clamp_min clamp_max label_replace label_join sort sort_desc absent absent_over_time avg_over_time max_over_time min_over_time sum_over_time count_over_time last_over_time predict_linear resets changes timestamp inf nan'.split(
    ' ',
  ),
);

/** The metric names a PromQL expression reads: label matchers, grouping labels, ranges and strings taken out first. */
function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = [...bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)].map((m) => m[0]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n.toLowerCase())))];
}

describe('the Grafana dashboard (docs/grafana-dashboard.json)', () => {
  let tdb: TestDatabase;
  let host: ServerProcess;
  let exported: Set<string>;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 1 });
    host = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS: `admin:${KEYS.admin}` } });
    const text = await (await fetch(`${host.url}/metrics`)).text();
    // every family the server declares; a histogram or summary exports its series under suffixes
    exported = new Set();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const [name, type] = [m[1]!, m[2]!];
      exported.add(name);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(name + s);
      if (type === 'summary') for (const s of ['_sum', '_count']) exported.add(name + s);
    }
  });
  afterAll(async () => {
    await host?.stop();
    await tdb?.drop();
  });

  it('is a dashboard Grafana imports: a Prometheus datasource variable, panels on the grid, a query in each', () => {
    expect(dashboard).toMatchObject({ title: 'lastunit', uid: 'lastunit-overview' });
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      if (p.type === 'row') continue;
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
  });

  it('names in every query only metrics the server exports, and every lastunit metric has a panel', () => {
    const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    expect(queries.length).toBeGreaterThan(20);
    const unknown: string[] = [];
    const named = new Set<string>();
    for (const q of queries) {
      const metrics = metricsOf(q.expr);
      expect(metrics.length, `${q.panel}: ${q.expr}`).toBeGreaterThan(0);
      for (const m of metrics) {
        named.add(m.replace(/_(bucket|sum|count)$/, ''));
        if (!exported.has(m)) unknown.push(`${q.panel}: ${m}`);
      }
    }
    expect(unknown).toEqual([]);
    const lastunit = [...exported].filter((m) => m.startsWith('lastunit_') && !/_(bucket|sum|count)$/.test(m));
    expect(lastunit.filter((m) => !named.has(m) && !named.has(m.replace(/_total$/, '')))).toEqual([]);
  });

  it('reads metric names out of PromQL the way Prometheus does', () => {
    expect(
      metricsOf(
        'histogram_quantile(0.99, sum by (le, channel) (rate(lastunit_channel_push_lag_seconds_bucket{job="x"}[5m])))',
      ),
    ).toEqual(['lastunit_channel_push_lag_seconds_bucket']);
    expect(metricsOf('time() - max(lastunit_reconciler_last_run_timestamp_seconds)')).toEqual([
      'lastunit_reconciler_last_run_timestamp_seconds',
    ]);
    expect(metricsOf('sum(rate(a_sum[5m])) / sum(rate(a_count[5m]))')).toEqual(['a_sum', 'a_count']);
  });
});
