import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (`apt-get install chromium`): the browser tests drive it through playwright-core, never a download. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Whether the browser tests can run. The same rule as Redis (test/support/redis.ts): in CI (CI=true) a missing chromium
 * is a failure, not a skip; elsewhere the suites that need it are skipped and say why.
 * @example const hasChromium = chromiumAvailable(); describe.skipIf(!hasChromium)(...)
 */
export function chromiumAvailable(executable = CHROMIUM, ci = process.env.CI === 'true'): boolean {
  if (existsSync(executable)) return true;
  if (ci) throw new Error(`chromium is required in CI but ${executable} is missing (apt-get install -y chromium)`);
  console.warn(`chromium not found at ${executable}: skipping the browser tests (they fail instead when CI=true)`);
  return false;
}

/** Headless chromium as every browser test starts it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
