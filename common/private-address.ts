// Which IP addresses a webhook may not be sent to (docs/events.md, "Safe to point at the internet"): loopback, private,
// link-local, carrier-grade NAT, multicast and the other special ranges, in IPv4 and IPv6 (IPv4-mapped included).
// Plain string arithmetic, no node:net: this module is shared code.

function v4Private(ip: string): boolean {
  const p = ip.split('.').map(Number);
  if (p.length !== 4 || p.some((n) => !Number.isInteger(n) || n < 0 || n > 255)) return true; // not an address: refuse
  const [a, b] = p as [number, number, number, number];
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && p[2] === 0) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a >= 224
  );
}

/**
 * True for an address a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE_URLS=true (and for anything that is not an
 * IP address at all).
 * @example isPrivateAddress('10.0.0.7') // true
 */
export function isPrivateAddress(ip: string): boolean {
  const a = ip.toLowerCase().replace(/^\[|\]$/g, '');
  if (/^\d+\.\d+\.\d+\.\d+$/.test(a)) return v4Private(a);
  if (!a.includes(':')) return true;
  const mapped = /^(?:0*:)*:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a) ?? /^::(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return v4Private(mapped[1]!);
  if (a === '::' || a === '::1' || /^0*(:0*)*:0*1$/.test(a)) return true;
  const first = Number.parseInt(a.split(':')[0] || '0', 16);
  return (
    (first & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (first & 0xffc0) === 0xfe80 || // link-local fe80::/10
    (first & 0xff00) === 0xff00 || // multicast
    first === 0 || // ::/8-ish: unspecified, IPv4-compatible, mapped forms not matched above
    a.startsWith('64:ff9b:') || // NAT64 reaches IPv4 space
    a.startsWith('2001:db8:')
  );
}
