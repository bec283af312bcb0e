import type { Reporter } from 'vitest/reporters';

/**
 * vitest 4.1 prints "1 failed" but exits 0 when only a hook (afterAll, beforeAll) of a file fails, so CI could pass a
 * broken suite. This reporter makes any failed run exit 1. vitest sets the exit code itself after the run ends; Node
 * reads process.exitCode after the 'exit' listeners ran, so it is set there, last.
 */
export default class FailOnFailedFiles implements Reporter {
  onTestRunEnd(_modules: unknown, _errors: unknown, reason: 'passed' | 'interrupted' | 'failed') {
    if (reason !== 'passed')
      process.once('exit', () => {
        process.exitCode = 1;
      });
  }
}
