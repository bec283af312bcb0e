// Partner apps for the partner tests (Node app, Node host process, worker): their keys on top of the shared test keys,
// as ApiKey entries and as the API_KEYS string, and the one extra-field document every example publishes.
import { execFile } from 'node:child_process';
import type { ApiKey } from '../common/caller.js';
import { KEYS, TEST_API_KEYS } from './keys.js';
import { ROOT } from './root.js';

/** `partner:acme:<key>` and `partner:globex:<key>`: two partner apps; KEYS.partner is a partner key without an app. */
export const PARTNER_KEYS = { acme: 'test_partner_acme_key_1_abcdef', globex: 'test_partner_globex_key_1_abcd' };

export const PARTNER_API_KEYS: ApiKey[] = [
  ...TEST_API_KEYS,
  { role: 'partner', client: 'acme', key: PARTNER_KEYS.acme },
  { role: 'partner', client: 'globex', key: PARTNER_KEYS.globex },
];

/** The same keys as API_KEYS holds them. */
export const PARTNER_API_KEYS_ENV = PARTNER_API_KEYS.map((k) =>
  k.client ? `${k.role}:${k.client}:${k.key}` : `${k.role}:${k.key}`,
).join(',');

export { KEYS };

/**
 * `npm run partner:publish -- <args>` as a partner's CI runs it (node/partner-publish-cli.ts, without npm's banner),
 * from the repository root, asynchronously (a server or bridge in this process keeps answering meanwhile).
 * @example await runPartnerPublish(['--app', 'acme', '--version', '1.0.0', 'manifest.json'], { LASTUNIT_URL, LASTUNIT_ADMIN_KEY })
 */
export function runPartnerPublish(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', 'node/partner-publish-cli.ts', ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, output: `${stdout}${stderr}` }),
    );
  });
}
