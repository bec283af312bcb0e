import { builder } from './builder.js';
import './common.js';
import './product.js';
import './order.js';
import './subscription.js';

/** The public GraphQL schema (ARCHITECTURE.md section 4). */
export const schema = builder.toSchema();
