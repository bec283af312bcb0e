// `npm run example:codegen` against a started `npm start`: publishes gql/persisted-documents.json, then runs the typed
// document by its hash.
import { exampleApp, runExample, show, SKU } from '../example-app.js';
import { executePersisted } from './client.js';
import { PartnerProductDocument } from './operations.js';

runExample(async () => {
  const app = await exampleApp('examples/partners/codegen/gql/persisted-documents.json', 'codegen-1.0.0', process.env);
  const data = await executePersisted({ url: app.endpoint, partnerKey: app.partnerKey }, PartnerProductDocument, {
    sku: SKU,
  });
  show('codegen', data.product);
});
