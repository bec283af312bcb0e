// `npm run example:fetch` against a started `npm start`: publishes partner-product.graphql under its sha256, then reads
// the product with a plain GET /graphql?documentId=.
import { exampleApp, runExample, show, SKU } from '../example-app.js';
import { fetchPartnerProduct } from './client.js';

runExample(async () => {
  const app = await exampleApp('examples/partners/fetch/persisted-documents.json', 'fetch-1.0.0', process.env);
  show('fetch', await fetchPartnerProduct({ url: app.endpoint, partnerKey: app.partnerKey }, SKU));
});
