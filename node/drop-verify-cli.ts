// `npm run drop:verify -- <dropId> [--entries <file.json>]`: fetches a DRAW drop's published values from the API
// (LASTUNIT_URL, default http://127.0.0.1:4000/graphql; LASTUNIT_API_KEY, any role) and recomputes the draw with
// common/drop-verify.ts. --entries: check a JSON array of entry ids you kept instead of the published list. Exit 0:
// drawn as published; 1: not (every problem printed); 2: bad usage or the drop is not drawn.
import { readFileSync } from 'node:fs';
import { verifyDraw } from '../common/drop-verify.js';

const QUERY = `query($id: ID!) { drop(id: $id) { id mode seedCommitment seed entriesDigest drawOrder } }`;

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const at = args.indexOf('--entries');
  const file = at >= 0 ? args[at + 1] : undefined;
  const dropId = args.find((a, i) => !a.startsWith('--') && (at < 0 || i !== at + 1));
  if (!dropId || (at >= 0 && !file)) {
    console.error('usage: npm run drop:verify -- <dropId> [--entries <file.json>]');
    return 2;
  }
  const res = await fetch(process.env.LASTUNIT_URL ?? 'http://127.0.0.1:4000/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.LASTUNIT_API_KEY ?? ''}` },
    body: JSON.stringify({ query: QUERY, variables: { id: dropId } }),
  });
  const body = (await res.json()) as { data?: { drop: Record<string, unknown> | null }; errors?: unknown };
  const d = body.data?.drop;
  if (!d || d.mode !== 'DRAW' || typeof d.seed !== 'string' || typeof d.entriesDigest !== 'string') {
    console.error(
      `drop ${dropId}: not found, not a draw, or not drawn yet ${body.errors ? JSON.stringify(body.errors) : ''}`,
    );
    return 2;
  }
  const published = {
    seedCommitment: String(d.seedCommitment),
    seed: d.seed,
    entriesDigest: d.entriesDigest,
    drawOrder: d.drawOrder as string[],
  };
  const entries = file ? (JSON.parse(readFileSync(file, 'utf8')) as string[]) : published.drawOrder;
  const r = await verifyDraw(published, entries);
  if (r.ok) {
    console.log(
      `drop ${dropId}: drawn as published (${entries.length} entries; winners first: ${r.order.slice(0, 3).join(', ')})`,
    );
    return 0;
  }
  for (const p of r.problems) console.log(`drop ${dropId}: NOT as published: ${p}`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
