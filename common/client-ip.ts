// The client's address behind zero or more trusted proxies (TRUST_PROXY). Without a trusted proxy the connection's
// own address is the only one a client cannot forge; X-Forwarded-For is read only as far as proxies we run wrote it.

/**
 * The address `trustProxy` hops away: 0 is the connection's peer; with N trusted proxies in front, the N-th address
 * from the right of X-Forwarded-For (each proxy appends the address it received the request from), or the leftmost
 * when the header lists fewer. IPv4-mapped IPv6 addresses (`::ffff:203.0.113.7`) are given as IPv4.
 * @example clientIpOf({ remoteAddress: '10.0.0.2', forwardedFor: '198.51.100.9, 203.0.113.7', trustProxy: 1 }) // '203.0.113.7'
 */
export function clientIpOf(opts: {
  remoteAddress?: string | null;
  forwardedFor?: string | null;
  trustProxy: number;
}): string | undefined {
  const hops = [opts.remoteAddress ?? undefined];
  if (opts.trustProxy > 0 && opts.forwardedFor) {
    const listed = opts.forwardedFor
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    hops.push(...listed.reverse());
  }
  const ip = hops[Math.min(opts.trustProxy, hops.length - 1)] ?? undefined;
  return ip?.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip || undefined;
}
