// What each example script needs to run against a started `npm start`: where the API is, the partner app's key, and
// the app's documents published under the example's own version (publishing a version again is a no-op).
//   LASTUNIT_URL (http://127.0.0.1:4000), LASTUNIT_PARTNER_KEY and LASTUNIT_ADMIN_KEY, LASTUNIT_PARTNER_APP (the
//   key's app); without the keys, the demo keys `npm start` keeps in DATA_DIR/demo-keys.json (DATA_DIR: .data).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentsOfManifest, publishDocuments } from '../../node/partner-publish.js';
import { demoKeys, lastunitBase } from '../demo-keys.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The demo product every example reads (node/demo-catalog.ts). */
export const SKU = 'LAMP-1';

export type ExampleApp = { endpoint: string; partnerKey: string; app: string };

/** Reads a JSON file of this repository (a manifest the example's tooling wrote). */
export const readJson = (file: string): unknown => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

/**
 * The partner app of this run, with `manifest` published as `<app>@<version>` first (one line printed).
 * @example const app = await exampleApp('examples/partners/fetch/persisted-documents.json', 'fetch-1.0.0', process.env)
 */
export async function exampleApp(
  manifest: string,
  version: string,
  env: Record<string, string | undefined>,
): Promise<ExampleApp> {
  const base = lastunitBase(env);
  const endpoint = `${base}/graphql`;
  const demo =
    env.LASTUNIT_PARTNER_KEY && env.LASTUNIT_ADMIN_KEY
      ? undefined
      : demoKeys(env.DATA_DIR || '.data', 'LASTUNIT_PARTNER_KEY / LASTUNIT_ADMIN_KEY');
  const partner = demo?.find((k) => k.role === 'partner');
  const partnerKey = env.LASTUNIT_PARTNER_KEY || partner?.key;
  const adminKey = env.LASTUNIT_ADMIN_KEY || demo?.find((k) => k.role === 'admin')?.key;
  const app = env.LASTUNIT_PARTNER_APP || partner?.client || 'acme';
  if (!partnerKey || !adminKey)
    throw new Error('the demo keys have no partner or admin key: set LASTUNIT_PARTNER_KEY and LASTUNIT_ADMIN_KEY');
  try {
    await fetch(`${base}/healthz`);
  } catch {
    throw new Error(`nothing answers at ${base}: start the server with \`npm start\` (or set LASTUNIT_URL)`);
  }
  const p = await publishDocuments({
    url: endpoint,
    adminKey,
    app,
    version,
    documents: documentsOfManifest(readJson(manifest)),
  });
  console.log(
    `${p.app}@${p.version}: ${p.replayed ? 'already published' : 'published'} (${p.documentCount} documents) at ${endpoint}`,
  );
  return { endpoint, partnerKey, app };
}

/** Prints what the example read, on one line a reader (and test/partner-example-scripts.test.ts) can take apart. */
export function show(client: string, product: unknown) {
  console.log(`${client}: product(sku: "${SKU}") = ${JSON.stringify(product)}`);
}

/** Runs an example's steps; a failure prints its message (no stack) and exits 1. */
export function runExample(steps: () => Promise<void>) {
  steps().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
