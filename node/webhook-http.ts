// The HTTP side of webhooks lastunit sends (docs/events.md): the address check at creation and at every delivery (DNS
// resolved here, every address checked, the request then made to the checked address only, so a DNS answer that
// changes between check and connect, DNS rebinding, cannot reach a private address), bounded bodies, no redirects.
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPrivateAddress } from '../common/private-address.js';

/** Every address of `host`; with `allowPrivate` false, refused when any is loopback, private or link-local. */
export async function resolveWebhookHost(
  host: string,
  allowPrivate: boolean,
): Promise<{ ok: true; addresses: { address: string; family: number }[] } | { ok: false; problem: string }> {
  const bare = host.replace(/^\[|\]$/g, '');
  let addresses: { address: string; family: number }[];
  try {
    addresses = isIP(bare)
      ? [{ address: bare, family: isIP(bare) }]
      : await lookup(bare, { all: true, verbatim: true });
  } catch {
    return { ok: false, problem: `${host} does not resolve` };
  }
  if (addresses.length === 0) return { ok: false, problem: `${host} does not resolve` };
  const bad = addresses.find((a) => isPrivateAddress(a.address));
  if (bad && !allowPrivate)
    return { ok: false, problem: `${host} resolves to a loopback, private or link-local address (${bad.address})` };
  return { ok: true, addresses };
}

/** The creation-time check of an endpoint's host (the syntax and scheme are checked by orders/webhook-endpoints.ts). */
export const checkWebhookHost = async (url: URL, allowPrivate: boolean): Promise<string | null> => {
  const r = await resolveWebhookHost(url.hostname, allowPrivate);
  return r.ok ? null : r.problem;
};

export type PostResult = { status: number | null; error: string | null };

/**
 * POSTs `body` to `url` once: the host resolved and checked now, the connection made to the checked address, a 3xx
 * answered is a failure (not followed), the response read up to `maxResponseBytes`, the whole bounded by `timeoutMs`.
 */
export function postWebhook(a: {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  maxResponseBytes?: number;
}): Promise<PostResult> {
  const url = new URL(a.url);
  const checkedLookup: LookupFunction = (hostname, options, callback) => {
    resolveWebhookHost(hostname, a.allowPrivate).then(
      (r) => {
        if (!r.ok) return callback(Object.assign(new Error(r.problem), { code: 'EPRIVATE' }), '', 0);
        const first = r.addresses[0]!;
        if (options.all) return callback(null, r.addresses as never, 0);
        callback(null, first.address, first.family);
      },
      (err: Error) => callback(err, '', 0),
    );
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve) => {
    let done = false;
    const finish = (r: PostResult) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...a.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(a.body) },
        lookup: checkedLookup,
        agent: false,
      },
      (res) => {
        let seen = 0;
        const max = a.maxResponseBytes ?? 65_536;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > max) res.destroy();
        });
        const status = res.statusCode ?? null;
        const answer = () =>
          finish({
            status,
            error: status !== null && status >= 200 && status < 300 ? null : `the endpoint answered ${status}`,
          });
        res.on('end', answer);
        res.on('close', answer);
        res.on('error', answer);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: null, error: `no answer within ${a.timeoutMs} ms` });
    }, a.timeoutMs);
    req.on('error', (err) => finish({ status: null, error: err.message }));
    req.end(a.body);
  });
}
