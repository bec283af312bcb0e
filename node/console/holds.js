// Holds and payments: active holds with their countdown, orders waiting on the processor with their age, deadline and
// next action, the reconciler's last pass, and the confirmed orders an admin captures or cancels. Every button is
// the API's own mutation (releaseReservation, captureOrder, cancelOrder); a refusal shows its userError.
import { useEffect, useRef, useState } from 'preact/hooks';
import { gql, errorOf, userErrorText } from './api.js';
import { ago, clock, html, shortId, time, usePoll } from './ui.js';

const OPEN_FIELDS = `orderId status customerId lines { sku quantity } createdAt expiresAt paymentState paymentRequestedAt
  paymentDeadlineAt nextCheckAt checks nextActionType`;
const OPEN = `{ openOrders { holds { ${OPEN_FIELDS} } awaitingPayment { ${OPEN_FIELDS} } reconcilerLastRunAt }
  orders(status: CONFIRMED, first: 10) { edges { node { id customerId createdAt lines { sku quantity }
    payment { provider captureState } } } } }`;
const RELEASE = `mutation Release($input: ReleaseReservationInput!) { releaseReservation(input: $input) { order { id status } userErrors { code message } } }`;
const CAPTURE = `mutation Capture($input: CaptureOrderInput!) { captureOrder(input: $input) { order { id } userErrors { code message } } }`;
const CANCEL = `mutation Cancel($input: CancelOrderInput!) { cancelOrder(input: $input) { order { id status } userErrors { code message } } }`;

const lines = (ls) => ls.map((l) => `${l.quantity} × ${l.sku}`).join(', ');

/** What happens next to a payment that waits: the shopper's action, or the reconciler's next look. */
function nextStep(o, now) {
  if (o.nextActionType) return `shopper: ${o.nextActionType}`;
  if (o.nextCheckAt) {
    const due = new Date(o.nextCheckAt).getTime() - now;
    return due > 0 ? `reconciler asks in ${ago(due)}` : 'reconciler asks now';
  }
  return 'waiting for the processor';
}

export function HoldsPanel({ now, refresh }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState(null);
  const last = useRef(0);
  const load = async () => {
    last.current = Date.now();
    const r = await gql(OPEN);
    if (r.data) {
      setData(r.data);
      setError(null);
    } else setError(errorOf(r));
  };
  usePoll(load, 2000);
  // a stock change moves holds too: read again soon after one, at most twice a second during a sale
  const soon = useRef(null);
  useEffect(() => {
    if (!refresh || soon.current) return;
    soon.current = setTimeout(
      () => {
        soon.current = null;
        load();
      },
      Math.max(0, last.current + 500 - Date.now()),
    );
  }, [refresh]);
  const act = async (query, input, done) => {
    const r = await gql(query, { input });
    const payload = r.data && Object.values(r.data)[0];
    if (!payload) setMsg({ bad: true, text: errorOf(r) || 'no answer' });
    else if (payload.userErrors.length) setMsg({ bad: true, text: `Refused: ${userErrorText(payload.userErrors)}` });
    else setMsg({ bad: false, text: done });
    load();
  };
  const open = data?.openOrders;
  const confirmed = data?.orders.edges.map((e) => e.node) ?? [];
  const lastRun = open?.reconcilerLastRunAt;
  return html`<section class="panel" id="holds" aria-labelledby="holds-title">
    <h2 id="holds-title">Holds and payments</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <p class=${`msg ${msg ? (msg.bad ? 'bad' : 'good') : ''}`} role="status" id="holds-msg">${msg ? msg.text : ''}</p>
    <p class="meta" id="reconciler">Reconciler: ${lastRun ? `last pass ${ago(now - new Date(lastRun).getTime())} ago (${time(lastRun)})` : 'no pass on this server yet'}</p>
    <h3>Active holds (${open?.holds.length ?? 0})</h3>
    <div class="scroll" tabindex="0" role="region" aria-label="Active holds">
      <table>
        <thead><tr><th scope="col">Order</th><th scope="col">Customer</th><th scope="col">Units</th><th scope="col">Ends in</th><th scope="col"></th></tr></thead>
        <tbody>
          ${(open?.holds ?? []).map(
            (o) => html`<tr key=${o.orderId} id=${`hold-${o.orderId}`}>
              <th scope="row"><code title=${o.orderId}>${shortId(o.orderId)}</code></th><td>${o.customerId}</td><td>${lines(o.lines)}</td>
              <td class="countdown">${clock((new Date(o.expiresAt).getTime() - now) / 1000)}</td>
              <td><button type="button" class="small" aria-label=${`Release hold of order ${shortId(o.orderId)} (${lines(o.lines)})`}
                onClick=${() => act(RELEASE, { orderId: o.orderId, reason: 'released from the console' }, `Released order ${shortId(o.orderId)}: its units are back on sale.`)}>Release</button></td>
            </tr>`,
          )}
          ${open && open.holds.length === 0 ? html`<tr><td colspan="5">No active holds.</td></tr>` : null}
        </tbody>
      </table>
    </div>
    <h3>Awaiting the processor (${open?.awaitingPayment.length ?? 0})</h3>
    <div class="scroll" tabindex="0" role="region" aria-label="Orders awaiting the processor">
      <table>
        <thead><tr><th scope="col">Order</th><th scope="col">Units</th><th scope="col">Age</th><th scope="col">Deadline</th><th scope="col">State</th><th scope="col">Next</th></tr></thead>
        <tbody>
          ${(open?.awaitingPayment ?? []).map(
            (o) => html`<tr key=${o.orderId}>
              <th scope="row"><code title=${o.orderId}>${shortId(o.orderId)}</code></th><td>${lines(o.lines)}</td>
              <td>${ago(now - new Date(o.paymentRequestedAt ?? o.createdAt).getTime())}</td>
              <td>${time(o.paymentDeadlineAt)}</td><td>${o.paymentState ?? '-'} (${o.checks} checks)</td><td>${nextStep(o, now)}</td>
            </tr>`,
          )}
          ${open && open.awaitingPayment.length === 0 ? html`<tr><td colspan="6">Nothing waits on the processor.</td></tr>` : null}
        </tbody>
      </table>
    </div>
    <h3>Recently confirmed</h3>
    <div class="scroll" tabindex="0" role="region" aria-label="Recently confirmed orders">
      <table>
        <thead><tr><th scope="col">Order</th><th scope="col">Units</th><th scope="col">Capture</th><th scope="col"></th></tr></thead>
        <tbody>
          ${confirmed.map(
            (o) => html`<tr key=${o.id}>
              <th scope="row"><code title=${o.id}>${shortId(o.id)}</code></th><td>${lines(o.lines)}</td>
              <td>${o.payment ? `${o.payment.captureState} (${o.payment.provider})` : '-'}</td>
              <td class="actions">
                ${
                  o.payment && ['PENDING', 'FAILED'].includes(o.payment.captureState)
                    ? html`<button type="button" class="small" aria-label=${`Capture order ${shortId(o.id)}`}
                      onClick=${() => act(CAPTURE, { orderId: o.id }, `Capture of ${shortId(o.id)} recorded.`)}>Capture</button>`
                    : null
                }
                <button type="button" class="small secondary" aria-label=${`Cancel order ${shortId(o.id)} and restock`}
                  onClick=${() => act(CANCEL, { orderId: o.id, restock: true, reason: 'cancelled from the console' }, `Cancelled ${shortId(o.id)}; units restocked.`)}>Cancel + restock</button>
                <button type="button" class="small secondary" aria-label=${`Cancel order ${shortId(o.id)} without restock`}
                  onClick=${() => act(CANCEL, { orderId: o.id, restock: false, reason: 'cancelled from the console' }, `Cancelled ${shortId(o.id)}; units not restocked.`)}>Cancel only</button>
              </td>
            </tr>`,
          )}
          ${data && confirmed.length === 0 ? html`<tr><td colspan="4">No confirmed orders yet.</td></tr>` : null}
        </tbody>
      </table>
    </div>
  </section>`;
}
