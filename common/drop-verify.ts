// Checking a DRAW drop from its published values alone (docs/drops.md, "Checking a draw"): the same rule as
// db/functions/111_drop-draw.sql, written with Web Crypto only, so a buyer can run it anywhere (Node, a browser).

/** What a drawn drop publishes: Drop.seedCommitment (at creation), Drop.seed, Drop.entriesDigest and Drop.drawOrder. */
export type PublishedDraw = { seedCommitment: string; seed: string; entriesDigest: string; drawOrder: string[] };
export type DrawCheck = { ok: boolean; problems: string[]; order: string[] };

const hex = (b: ArrayBuffer) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
const bytesOf = (h: string): Uint8Array<ArrayBuffer> =>
  new Uint8Array((h.match(/../g) ?? []).map((x) => Number.parseInt(x, 16)));
const utf8 = (s: string): Uint8Array<ArrayBuffer> => new Uint8Array(new TextEncoder().encode(s));
const sha256 = async (data: Uint8Array<ArrayBuffer>) => hex(await crypto.subtle.digest('SHA-256', data));

/** entriesDigest: hex SHA-256 of the entry ids (lowercase) sorted ascending, joined by "\n", no trailing newline. */
export async function entriesDigest(entryIds: string[]): Promise<string> {
  const sorted = entryIds.map((id) => id.toLowerCase()).sort();
  return sha256(utf8(sorted.join('\n')));
}

/** The draw order: entries sorted by hex HMAC-SHA256(key = seed bytes, message = entry id as lowercase text), ties by id. */
export async function drawOrderOf(seedHex: string, entryIds: string[]): Promise<string[]> {
  const key = await crypto.subtle.importKey('raw', bytesOf(seedHex), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const scored = await Promise.all(
    entryIds.map(async (id) => ({
      id: id.toLowerCase(),
      mac: hex(await crypto.subtle.sign('HMAC', key, utf8(id.toLowerCase()))),
    })),
  );
  scored.sort((a, b) => (a.mac < b.mac ? -1 : a.mac > b.mac ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return scored.map((s) => s.id);
}

/**
 * Whether a drop was drawn as published: the seed is the one committed to at creation, `entryIds` (the published
 * list, or a copy the buyer kept) is the list the digest was taken over, and the published draw order is the one the
 * seed gives. `entryIds` defaults to the published draw order's ids.
 * @example const r = await verifyDraw(published); r.ok // true: drawn as published
 */
export async function verifyDraw(p: PublishedDraw, entryIds: string[] = p.drawOrder): Promise<DrawCheck> {
  const problems: string[] = [];
  if ((await sha256(bytesOf(p.seed))) !== p.seedCommitment.toLowerCase())
    problems.push('the revealed seed does not hash to the seedCommitment published at creation');
  if ((await entriesDigest(entryIds)) !== p.entriesDigest.toLowerCase())
    problems.push('the entry list does not match the published entriesDigest (entries added, removed or changed)');
  const order = await drawOrderOf(p.seed, entryIds);
  const published = p.drawOrder.map((id) => id.toLowerCase());
  if (order.length !== published.length || order.some((id, i) => id !== published[i]))
    problems.push('the published draw order is not the order the seed gives these entries');
  return { ok: problems.length === 0, problems, order };
}
