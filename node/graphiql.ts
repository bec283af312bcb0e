// GraphiQL served by this host: the built GraphiQL of @graphql-yoga/render-graphiql (the one Yoga otherwise loads
// from a CDN) as files under /graphiql/<version>/, so the page works offline and under a CSP without inline scripts.
import { Hono } from 'hono';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { GraphiQLOptions } from 'graphql-yoga';

const VERSION = (createRequire(import.meta.url)('@graphql-yoga/render-graphiql/package.json') as { version: string })
  .version;
const BASE = `/graphiql/${VERSION}`;
const START = readFileSync(fileURLToPath(new URL('./graphiql/start.js', import.meta.url)), 'utf8');

// The page allows scripts, workers and requests from this origin only; styles inline too (the editor injects them).
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "worker-src 'self'",
  "connect-src 'self'",
].join('; ');

type Asset = { body: string | Uint8Array<ArrayBuffer>; type: string };

// About 9 MB of JavaScript: read on the first GraphiQL request, not at start (production never serves it).
let assets: Promise<Record<string, Asset>> | undefined;
const loadAssets = () =>
  (assets ??= import('@graphql-yoga/render-graphiql/graphiql').then((a): Record<string, Asset> => {
    const js = 'text/javascript; charset=utf-8';
    const icon = /^data:([^;]+);base64,(.*)$/.exec(a.favicon);
    return {
      'yoga-graphiql.js': { body: a.js, type: js },
      'graphiql.css': { body: a.css, type: 'text/css; charset=utf-8' },
      'editor.worker.js': { body: a.editorWorkerService, type: js },
      'json.worker.js': { body: a.jsonWorker, type: js },
      'graphql.worker.js': { body: a.graphqlWorker, type: js },
      'start.js': { body: START, type: js },
      ...(icon ? { 'favicon.ico': { body: new Uint8Array(Buffer.from(icon[2]!, 'base64')), type: icon[1]! } } : {}),
    };
  }));

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * GraphiQL's page, for createYoga's `renderGraphiQL`: links to this host's assets, its options as a JSON data block
 * (read by start.js; `<` escaped so no value can close the tag).
 * @example createApp({ ..., graphiql: true, renderGraphiql })
 */
export function renderGraphiql(options: GraphiQLOptions = {}): string {
  const title = typeof options.title === 'string' ? options.title : 'GraphiQL';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${CSP}">
<title>${esc(title)}</title><link rel="icon" href="${BASE}/favicon.ico"><link rel="stylesheet" href="${BASE}/graphiql.css"></head>
<body id="body" class="no-focus-outline"><noscript>GraphiQL needs JavaScript.</noscript><div id="root"></div>
<script type="application/json" id="graphiql-options">${JSON.stringify(options).replace(/</g, '\\u003c')}</script>
<script src="${BASE}/start.js" data-base="${BASE}"></script><script src="${BASE}/yoga-graphiql.js"></script></body></html>`;
}

/**
 * The routes of GraphiQL's assets (GET /graphiql/<version>/<file>), cached for a year: a new package version is a new path.
 * @example app.route('/', graphiqlAssets())
 */
export function graphiqlAssets() {
  const app = new Hono();
  app.get(`${BASE}/:file`, async (c) => {
    const asset = (await loadAssets())[c.req.param('file')];
    if (!asset) return c.notFound();
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
    });
  });
  return app;
}
