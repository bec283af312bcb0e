// Stock: every SKU's available / held / awaiting payment / sold, live over graphql-ws (an availabilityChanged event
// re-reads that SKU's row at once), with restock and a stock-take (setStock with expectedAvailable) per row.
import { useEffect, useRef, useState } from 'preact/hooks';
import { gql, errorOf, userErrorText } from './api.js';
import { html } from './ui.js';

const STOCK_FIELDS = 'sku name available held awaitingPayment sold purchaseLimit version components { sku quantity }';
const STOCK = `query Stock($skus: [String!]) { stockLevels(skus: $skus) { ${STOCK_FIELDS} } }`;
const WATCH = 'subscription Watch($skus: [String!]!) { availabilityChanged(skus: $skus) { sku available version } }';
const RESTOCK = `mutation Restock($input: RestockInput!) { restock(input: $input) { availability { available } userErrors { code message field } } }`;
const SET_STOCK = `mutation SetStock($input: SetStockInput!) { setStock(input: $input) { availability { available } userErrors { code message field } } }`;

/** The rows, kept live: a full read every 5 s, and one SKU's read the moment its availability changes. */
export function useStock(client, onChange) {
  const [rows, setRows] = useState([]);
  const [error, setError] = useState(null);
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  const merge = (fresh) =>
    setRows((old) => {
      const bySku = new Map(old.map((r) => [r.sku, r]));
      for (const r of fresh) bySku.set(r.sku, r);
      return [...bySku.values()].sort((a, b) => (a.sku < b.sku ? -1 : 1));
    });
  const loadAll = async () => {
    const r = await gql(STOCK, {});
    if (r.data) {
      setRows(r.data.stockLevels);
      setError(null);
    } else setError(errorOf(r));
  };
  const loadSkus = async (skus) => {
    const r = await gql(STOCK, { skus });
    if (r.data) merge(r.data.stockLevels);
  };
  useEffect(() => {
    loadAll();
    const t = setInterval(loadAll, 5000);
    return () => clearInterval(t);
  }, []);
  const skuKey = rows
    .map((r) => r.sku)
    .slice(0, 100)
    .join(',');
  useEffect(() => {
    if (!client || !skuKey) return;
    const skus = skuKey.split(',');
    // events are read together: at most one stockLevels per 50 ms for every SKU that moved meanwhile (a steady
    // stream of sales still shows, it is not postponed for ever)
    let due = new Set();
    let timer = null;
    const stop = client.subscribe(
      { query: WATCH, variables: { skus } },
      {
        next: ({ data }) => {
          const sku = data?.availabilityChanged?.sku;
          if (!sku) return;
          due.add(sku);
          timer ??= setTimeout(() => {
            timer = null;
            const batch = [...due];
            due = new Set();
            loadSkus(batch);
            onChange?.();
          }, 50);
        },
        error: () => {},
        complete: () => {},
      },
    );
    return () => {
      clearTimeout(timer);
      stop();
    };
  }, [client, skuKey]);
  return { rows, error, reload: loadAll, reloadSku: (sku) => loadSkus([sku]) };
}

function Adjust({ row, onDone }) {
  // the count the person saw when they opened this: a stock-take applies only if it still holds (expectedAvailable)
  const [expected] = useState(row.available);
  const [add, setAdd] = useState('');
  const [count, setCount] = useState(String(row.available));
  const [msg, setMsg] = useState(null);
  const id = (what) => `${what}-${row.sku}`;
  const run = async (query, input, verb) => {
    const r = await gql(query, { input: { ...input, idempotencyKey: crypto.randomUUID() } });
    const payload = r.data && (r.data.restock || r.data.setStock);
    if (!payload) return setMsg({ bad: true, text: errorOf(r) || 'no answer' });
    if (payload.userErrors.length) return setMsg({ bad: true, text: `Refused: ${userErrorText(payload.userErrors)}` });
    setMsg({ bad: false, text: `${verb}: ${payload.availability.available} available now.` });
    onDone();
  };
  const restock = (e) => {
    e.preventDefault();
    run(RESTOCK, { sku: row.sku, quantity: Number(add) }, 'Restocked');
  };
  const setStock = (e) => {
    e.preventDefault();
    run(SET_STOCK, { sku: row.sku, available: Number(count), expectedAvailable: expected }, 'Stock set');
  };
  return html`<div class="adjust">
    <form class="inline" onSubmit=${restock}>
      <label for=${id('restock')}>Add units to ${row.sku}</label>
      <input id=${id('restock')} type="number" inputmode="numeric" min="1" required value=${add}
        onInput=${(e) => setAdd(e.currentTarget.value)} />
      <button type="submit">Restock</button>
    </form>
    <form class="inline" onSubmit=${setStock}>
      <label for=${id('count')}>Set available of ${row.sku} to</label>
      <input id=${id('count')} type="number" inputmode="numeric" min="0" required value=${count}
        onInput=${(e) => setCount(e.currentTarget.value)} />
      <button type="submit">Set stock</button>
      <span class="hint" id=${id('expected')}>only if available is still ${expected} (as when you opened this)</span>
    </form>
    <p class=${`msg ${msg ? (msg.bad ? 'bad' : 'good') : ''}`} role="status" id=${id('msg')}>${msg ? msg.text : ''}</p>
  </div>`;
}

export function StockPanel({ stock }) {
  const [open, setOpen] = useState(null);
  const { rows, error } = stock;
  return html`<section class="panel" id="stock" aria-labelledby="stock-title">
    <h2 id="stock-title">Stock</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <div class="scroll" tabindex="0" role="region" aria-label="Stock table">
      <table>
        <thead><tr><th scope="col">SKU</th><th scope="col">Available</th><th scope="col">Held</th>
          <th scope="col">Awaiting payment</th><th scope="col">Sold</th><th scope="col">Limit</th><th scope="col"></th></tr></thead>
        <tbody>
          ${rows.map(
            (r) => html`<tr key=${r.sku} id=${`stock-${r.sku}`}>
                <th scope="row"><span class="sku">${r.sku}</span><span class="name">${r.name}</span>
                  ${r.components ? html`<span class="bundle">bundle of ${r.components.map((c) => `${c.quantity} × ${c.sku}`).join(', ')}</span>` : null}</th>
                <td data-col="available">${r.available}</td><td data-col="held">${r.held}</td>
                <td data-col="awaiting">${r.awaitingPayment}</td><td data-col="sold">${r.sold}</td>
                <td>${r.purchaseLimit ?? 'none'}</td>
                <td>${
                  r.components
                    ? null
                    : html`<button type="button" class="small" aria-expanded=${open === r.sku}
                        aria-controls=${`adjust-${r.sku}`} onClick=${() => setOpen(open === r.sku ? null : r.sku)}>
                        Adjust<span class="visually-hidden"> ${r.sku}</span></button>`
                }</td>
              </tr>
              ${open === r.sku ? html`<tr id=${`adjust-${r.sku}`}><td colspan="7"><${Adjust} row=${r} onDone=${() => stock.reloadSku(r.sku)} /></td></tr>` : null}`,
          )}
          ${rows.length === 0 ? html`<tr><td colspan="7">No products yet.</td></tr>` : null}
        </tbody>
      </table>
    </div>
  </section>`;
}
