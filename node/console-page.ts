// The shop's console (docs/console.md) as the Node host serves it: GET /console (a page with no inline script and a
// strict Content-Security-Policy) and its script and style under /console/assets/. The script is node/console/*.js
// with preact, htm and graphql-ws from node_modules, bundled by esbuild on the first request and kept in memory.
import { Hono } from 'hono';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('./console/', import.meta.url));
const STYLE = readFileSync(`${DIR}console.css`, 'utf8');

/**
 * Everything from this origin only: no inline script or style attribute, no CDN, no frames, no plugins; graphql-ws
 * connects back to this origin ('self' covers ws: and wss: of it).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>lastunit console</title><link rel="stylesheet" href="/console/assets/console.css"></head>
<body><div id="app"><noscript>The console needs JavaScript.</noscript></div>
<script type="module" src="/console/assets/console.js"></script></body></html>`;

// esbuild is imported only when the first browser asks for the script (a host that never serves the console never
// loads it); a failed build is not kept, so the next request tries again.
let bundle: Promise<string> | undefined;
function buildScript(): Promise<string> {
  bundle ??= (async () => {
    const esbuild = await import('esbuild');
    const out = await esbuild.build({
      entryPoints: [`${DIR}main.js`],
      bundle: true,
      write: false,
      format: 'esm',
      target: 'es2022',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    });
    return out.outputFiles[0]!.text;
  })().catch((err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

/**
 * The console routes. `enabled` false (CONSOLE=off, the production default): every console path answers 404 saying
 * so, and nothing is bundled.
 * @example app.route('/', consolePage({ enabled: config.http.console }))
 */
export function consolePage(opts: { enabled: boolean }) {
  const app = new Hono();
  if (!opts.enabled) {
    const off = (c: { text: (t: string, s: 404, h: Record<string, string>) => Response }) =>
      c.text('the console is off on this server (CONSOLE=off; see docs/console.md)', 404, {
        'cache-control': 'no-store',
      });
    app.get('/console', off);
    app.get('/console/*', off);
    return app;
  }
  app.get('/console', (c) => c.html(PAGE, 200, SECURITY_HEADERS));
  app.get('/console/assets/console.js', async (c) =>
    c.body(await buildScript(), 200, { ...SECURITY_HEADERS, 'content-type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/console/assets/console.css', (c) =>
    c.body(STYLE, 200, { ...SECURITY_HEADERS, 'content-type': 'text/css; charset=utf-8' }),
  );
  return app;
}
