import { builder } from './builder.js';
import './common.js';
import './product.js';
import './purchase-limit.js';
import './order.js';
import './buyer-token.js';
import './subscription.js';
import './partner.js';
import './channel.js';
import './pages.js';
import './drop.js';
import './waitlist.js';

/** The public GraphQL schema (docs/api.md). */
export const schema = builder.toSchema();
