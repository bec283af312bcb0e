// The configuration's defaults, for tests and benchmarks that build the pieces below a host themselves: the sections
// (node/config-sections.ts, common/config-sections.ts) hold every default, so nothing here repeats a number.
import { loadConfig } from '../node/config.js';

/** What the Node host resolves from an empty environment under NODE_ENV=test. */
export const DEFAULTS = loadConfig({ NODE_ENV: 'test' });
