// One rule for what the browser and Redis tests need (README, "Tests"): asked only through test/support, where a missing
// one fails the run under CI=true and is a skip with a printed reason otherwise.
import { describe, expect, it, vi } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../kit/root.js';
import { chromiumAvailable } from './support/browser.js';
import { DEAD_REDIS_URL, redisAvailable } from './support/redis.js';

const testFiles = readdirSync(path.join(ROOT, 'test')).filter((f) => f.endsWith('.test.ts'));

describe('what a test needs', () => {
  it('no test file decides on its own whether Redis or Chromium is there', () => {
    const own = testFiles.flatMap((f) => {
      const src = readFileSync(path.join(ROOT, 'test', f), 'utf8');
      return [
        /skipIf\(!process\.env\.REDIS_URL/,
        /\/usr\/bin\/chromium/,
        /from 'playwright-core'.*\n[\s\S]*chromium\.launch\(/,
      ]
        .filter((re) => re.test(src))
        .map((re) => `${f}: ${re.source}`);
    });
    expect(own).toEqual([]);
  });

  it('a missing chromium fails under CI=true and is a skip that says why otherwise', () => {
    const missing = path.join(ROOT, 'no-such-chromium');
    expect(() => chromiumAvailable(missing, true)).toThrow(
      /chromium is required in CI but .*no-such-chromium is missing/,
    );
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      expect(chromiumAvailable(missing, false)).toBe(false);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/chromium not found at .*: skipping the browser tests/));
    } finally {
      warn.mockRestore();
    }
  });

  it('a Redis that does not answer fails under CI=true and is a skip that says why otherwise', async () => {
    await expect(redisAvailable(DEAD_REDIS_URL, true)).rejects.toThrow(
      /Redis is required in CI but redis:\/\/127\.0\.0\.1:1 does not answer/,
    );
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      expect(await redisAvailable(DEAD_REDIS_URL, false)).toBe(false);
      expect(warn).toHaveBeenCalledWith(
        expect.stringMatching(/Redis not available at redis:\/\/127\.0\.0\.1:1: skipping/),
      );
    } finally {
      warn.mockRestore();
    }
  });
});
