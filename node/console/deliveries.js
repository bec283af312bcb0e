// Deliveries: every webhook endpoint (docs/events.md) with whether it is enabled, since when it fails, and its failing
// deliveries (attempts made, the last HTTP status and error, the next attempt), each with a Redeliver button that
// calls redeliverEvent (a delivery of its own, same webhook-id); a refusal shows the API's userError.
import { useState } from 'preact/hooks';
import { errorOf, gql, userErrorText } from './api.js';
import { ago, html, time, usePoll } from './ui.js';

// the newest deliveries of each endpoint (a failing one is among them while it is retried); the query cost limit
// counts `first` against the fields of each delivery, so 15 is what one read may ask
const ENDPOINTS = `{ webhookEndpoints { id url description enabled disabledAt failingSince
  deliveries(first: 15) { edges { node { eventId attempt status httpStatus lastError nextAttemptAt createdAt } } } } }`;
const REDELIVER = `mutation Redeliver($input: RedeliverEventInput!) { redeliverEvent(input: $input) {
  delivery { eventId status } userErrors { code message } } }`;

/** A delivery that failed: given up on (FAILED), or still pending after at least one attempt that did not get a 2xx. */
const failing = (d) => d.status === 'FAILED' || (d.status === 'PENDING' && d.attempt > 0);

function nextAttempt(d, now) {
  if (d.status === 'FAILED') return 'given up';
  if (!d.nextAttemptAt) return '-';
  const due = new Date(d.nextAttemptAt).getTime() - now;
  return due > 0 ? `in ${ago(due)}` : 'now';
}

function Endpoint({ e, now, redeliver }) {
  const rows = e.deliveries.edges.map((x) => x.node).filter(failing);
  const state = e.enabled ? 'enabled' : `disabled ${time(e.disabledAt)}`;
  return html`<article class="endpoint" id=${`endpoint-${e.id}`} aria-labelledby=${`endpoint-${e.id}-title`}>
    <h3 id=${`endpoint-${e.id}-title`}>${e.description || e.url}</h3>
    <p class="meta">
      <span class="url">${e.url}</span>${' · '}<span class=${e.enabled ? 'ok' : 'bad'} data-col="enabled">${state}</span>${' · '}<span data-col="failing-since">${e.failingSince ? `failing since ${time(e.failingSince)} (${ago(now - new Date(e.failingSince).getTime())})` : 'not failing'}</span>
    </p>
    <div class="scroll" tabindex="0" role="region" aria-label=${`Failing deliveries to ${e.url}`}>
      <table>
        <thead><tr><th scope="col">Event</th><th scope="col">Attempts</th><th scope="col">Status</th><th scope="col">HTTP</th>
          <th scope="col">Last error</th><th scope="col">Next attempt</th></tr></thead>
        <tbody>
          ${rows.map(
            (d) => html`<tr key=${`${d.eventId}/${d.createdAt}`} class="delivery" data-event=${d.eventId}>
              <th scope="row" title=${d.eventId}><code class="event">${d.eventId.slice(0, 16)}…</code>
                <button type="button" class="small" aria-label=${`Redeliver ${d.eventId} to ${e.url}`}
                  onClick=${() => redeliver(e, d.eventId)}>Redeliver</button></th><td data-col="attempt">${d.attempt}</td><td data-col="status">${d.status}</td>
              <td data-col="http">${d.httpStatus ?? '-'}</td><td class="error">${d.lastError ?? ''}</td>
              <td data-col="next">${nextAttempt(d, now)}</td>
            </tr>`,
          )}
          ${rows.length === 0 ? html`<tr><td colspan="6">No failing deliveries.</td></tr>` : null}
        </tbody>
      </table>
    </div>
  </article>`;
}

export function DeliveriesPanel({ now }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState(null);
  const load = async () => {
    const r = await gql(ENDPOINTS);
    if (r.data) {
      setData(r.data.webhookEndpoints);
      setError(null);
    } else setError(errorOf(r));
  };
  usePoll(load, 2000);
  const redeliver = async (e, eventId) => {
    const r = await gql(REDELIVER, { input: { endpointId: e.id, eventId } });
    const p = r.data?.redeliverEvent;
    if (!p) setMsg({ bad: true, text: errorOf(r) || 'no answer' });
    else if (p.userErrors.length) setMsg({ bad: true, text: `Refused: ${userErrorText(p.userErrors)}` });
    else setMsg({ bad: false, text: `${eventId} queued again for ${e.url} (same webhook-id).` });
    load();
  };
  return html`<section class="panel" id="deliveries" aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Deliveries</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <p class=${`msg ${msg ? (msg.bad ? 'bad' : 'good') : ''}`} role="status" id="deliveries-msg">${msg ? msg.text : ''}</p>
    ${(data ?? []).map((e) => html`<${Endpoint} key=${e.id} e=${e} now=${now} redeliver=${redeliver} />`)}
    ${data && data.length === 0 ? html`<p class="meta" id="deliveries-empty">No webhook endpoints (createWebhookEndpoint, docs/events.md).</p>` : null}
  </section>`;
}
