// The reference for the middleware tax: graphql-yoga alone on node:http, our schema, no auth, limits, metrics, logging
// or Hono. `npm run bench` starts it as a child process (kit/server.ts) and asks it `{ __typename }`. 127.0.0.1 only.
import { createServer } from 'node:http';
import { createYoga } from 'graphql-yoga';
import { schema } from '../schema/index.js';

const yoga = createYoga({ schema, graphqlEndpoint: '/graphql', graphiql: false, landingPage: false, logging: false });
const server = createServer(yoga);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const a = server.address();
  console.log(`bare yoga listening on http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/graphql`);
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => server.close(() => process.exit(0)));
