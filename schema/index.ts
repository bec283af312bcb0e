import { defaultFieldResolver } from 'graphql';
import { builder } from './builder.js';
import { tracingEnabled, withSpan } from '../common/tracing.js';
import './common.js';
import './product.js';
import './purchase-limit.js';
import './stock-buckets.js';
import './order.js';
import './buyer-token.js';
import './subscription.js';
import './partner.js';
import './channel.js';
import './pages.js';
import './console.js';
import './event.js';
import './drop.js';
import './waitlist.js';

/** The public GraphQL schema (docs/api.md). */
export const schema = builder.toSchema();

// Each root field's resolver is a span when tracing is on (common/tracing.ts): the request's span its parent, its SQL
// statements' spans its children. Off, the wrapper is one boolean test before the field's own resolver.
for (const type of [schema.getQueryType(), schema.getMutationType()]) {
  if (!type) continue;
  for (const field of Object.values(type.getFields())) {
    const resolve = field.resolve ?? defaultFieldResolver;
    const name = `${type.name}.${field.name}`;
    field.resolve = (source, args, ctx, info) =>
      tracingEnabled()
        ? withSpan(`graphql ${name}`, { 'graphql.field': name }, () => resolve(source, args, ctx, info))
        : resolve(source, args, ctx, info);
  }
}
