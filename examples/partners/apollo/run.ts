// `npm run example:apollo` against a started `npm start`: publishes the manifest generate-persisted-query-manifest wrote,
// then reads the product with Apollo Client, which sends only the manifest's id.
import type { PersistedQueryManifest } from '@apollo/generate-persisted-query-manifest';
import { exampleApp, runExample, readJson, show, SKU } from '../example-app.js';
import { createPartnerClient } from './client.js';
import { PARTNER_PRODUCT } from './operations.js';

const MANIFEST = 'examples/partners/apollo/persisted-query-manifest.json';

runExample(async () => {
  const app = await exampleApp(MANIFEST, 'apollo-1.0.0', process.env);
  const client = createPartnerClient({
    url: app.endpoint,
    partnerKey: app.partnerKey,
    manifest: readJson(MANIFEST) as PersistedQueryManifest,
  });
  const { data, error } = await client.query({ query: PARTNER_PRODUCT, variables: { sku: SKU } });
  if (error) throw error;
  show('apollo', (data as { product: unknown }).product);
});
