// `npm run example:urql` against a started `npm start`: publishes the documents as urql hashes them, then reads the
// product with urql, by id only (enforcePersistedQueries).
import { exampleApp, runExample, show, SKU } from '../example-app.js';
import { createPartnerClient } from './client.js';
import { PARTNER_PRODUCT } from './operations.js';

runExample(async () => {
  const app = await exampleApp('examples/partners/urql/persisted-documents.json', 'urql-1.0.0', process.env);
  const { data, error } = await createPartnerClient({ url: app.endpoint, partnerKey: app.partnerKey })
    .query(PARTNER_PRODUCT, { sku: SKU })
    .toPromise();
  if (error) throw error;
  show('urql', data.product);
});
