// The Node versions package.json's `engines` names are ones every locked package accepts, so `npm install` on any of
// them prints no EBADENGINE warning, and the Node running the suite is one of them.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { ROOT } from '../kit/root.js';

type Lock = { packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }> };
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const supported: string = json('package.json').engines.node;

describe('engines.node', () => {
  it('is accepted by every package in package-lock.json (no "Unsupported engine" warning on install)', () => {
    const lock = json('package-lock.json') as Lock;
    const refusing = Object.entries(lock.packages)
      .map(([where, p]) => ({ where, wants: Array.isArray(p.engines) ? undefined : p.engines?.node }))
      .filter((p): p is { where: string; wants: string } => !!p.where && !!p.wants)
      .filter((p) => !semver.subset(supported, p.wants, { includePrerelease: false }));
    expect(refusing.map((p) => `${p.where.replace(/^.*node_modules\//, '')} wants ${p.wants}`)).toEqual([]);
  });

  it('accepts the Node this suite runs on (what CI runs is what the project says it supports)', () => {
    expect(
      semver.satisfies(process.versions.node, supported),
      `node ${process.versions.node} vs engines ${supported}`,
    ).toBe(true);
  });
});
