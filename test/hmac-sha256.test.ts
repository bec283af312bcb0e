// common/hmac-sha256.ts (the worker-safe HMAC behind marketplace webhook signatures) agrees with node:crypto, so a
// signature Shopify or a marketplace computed with a standard library verifies here, and ours verify there.
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hmacSha256, sameText, toBase64, toHex } from '../common/hmac-sha256.js';

describe('hmacSha256', () => {
  it('matches node:crypto for any key and message (empty, long keys, multi-byte text, block boundaries)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200, unit: 'binary' }), fc.string({ maxLength: 300, unit: 'binary' }), (key, message) => {
        const mac = hmacSha256(key, message);
        expect(toHex(mac)).toBe(createHmac('sha256', key).update(message, 'utf8').digest('hex'));
        expect(toBase64(mac)).toBe(createHmac('sha256', key).update(message, 'utf8').digest('base64'));
      }),
      { numRuns: 300 },
    );
    for (const n of [55, 56, 63, 64, 65, 119, 120, 128]) {
      const m = 'a'.repeat(n);
      expect(toHex(hmacSha256('k'.repeat(n), m))).toBe(createHmac('sha256', 'k'.repeat(n)).update(m).digest('hex'));
    }
  });

  it('compares texts exactly', () => {
    expect(sameText('abc', 'abc')).toBe(true);
    expect(sameText('abc', 'abd')).toBe(false);
    expect(sameText('abc', 'abcd')).toBe(false);
    expect(sameText('', '')).toBe(true);
  });
});
