// Drops (docs/drops.md): every drop, newest first, with its mode and state, entrants, admissions outstanding, the queue
// (entries still waiting), orders placed from it, and the sell-through of its SKU (sold of the units it had), read
// every second. Read only: drops are created and entered through the API.
import { useState } from 'preact/hooks';
import { errorOf, gql } from './api.js';
import { html, time, usePoll } from './ui.js';

const DROPS = `{ drops(first: 20) { id sku mode state opensAt closesAt claimSeconds maxPerCustomer
  counts { entries waiting admitted ordered lapsed notDrawn } } }`;
const STOCK =
  'query DropStock($skus: [String!]) { stockLevels(skus: $skus) { sku available held awaitingPayment sold } }';

/** Sold of every unit the SKU has (available, held, awaiting payment, sold), as a whole percentage. */
function sellThrough(s) {
  if (!s) return '-';
  const units = s.available + s.held + s.awaitingPayment + s.sold;
  return units ? `${Math.round((100 * s.sold) / units)}% (${s.sold} of ${units})` : '-';
}

/** When the drop's state changes next, as a person reads it. */
function when(d) {
  if (d.state === 'SCHEDULED') return `opens ${time(d.opensAt)}`;
  if (d.state === 'OPEN') return `closes ${time(d.closesAt)}`;
  return `closed ${time(d.closesAt)}`;
}

export function DropsPanel() {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = async () => {
    const r = await gql(DROPS);
    if (!r.data) return setError(errorOf(r));
    const skus = [...new Set(r.data.drops.map((d) => d.sku))];
    const s = skus.length ? await gql(STOCK, { skus }) : { data: { stockLevels: [] } };
    if (!s.data) return setError(errorOf(s));
    const bySku = new Map(s.data.stockLevels.map((x) => [x.sku, x]));
    setData(r.data.drops.map((d) => ({ ...d, stock: bySku.get(d.sku) })));
    setError(null);
  };
  usePoll(load, 1000);
  return html`<section class="panel" id="drops" aria-labelledby="drops-title">
    <h2 id="drops-title">Drops</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <div class="scroll" tabindex="0" role="region" aria-label="Drops">
      <table>
        <thead><tr><th scope="col">SKU</th><th scope="col">Mode</th><th scope="col">State</th><th scope="col">Entrants</th>
          <th scope="col">Admitted</th><th scope="col">Queue</th><th scope="col">Ordered</th><th scope="col">Sell-through</th></tr></thead>
        <tbody>
          ${(data ?? []).map(
            (d) => html`<tr key=${d.id} id=${`drop-${d.id}`}>
              <th scope="row"><span class="sku">${d.sku}</span><span class="meta">${when(d)} · ${d.claimSeconds} s to order · ${d.maxPerCustomer} each</span></th>
              <td data-col="mode">${d.mode}</td><td data-col="state">${d.state}</td>
              <td data-col="entries">${d.counts.entries}</td><td data-col="admitted">${d.counts.admitted}</td>
              <td data-col="waiting">${d.counts.waiting}</td><td data-col="ordered">${d.counts.ordered}</td>
              <td data-col="sell-through">${sellThrough(d.stock)}</td>
            </tr>`,
          )}
          ${data && data.length === 0 ? html`<tr><td colspan="8">No drops (createDrop, docs/drops.md).</td></tr>` : null}
        </tbody>
      </table>
    </div>
  </section>`;
}
