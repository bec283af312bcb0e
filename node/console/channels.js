// Channels: per marketplace and SKU, what it lists against what it should, how long a pending push has waited, the last
// error and a retry; and the oversell incidents with where their cancellation is.
import { useState } from 'preact/hooks';
import { gql, errorOf, userErrorText } from './api.js';
import { ago, html, time, usePoll } from './ui.js';

const HEALTH = `{ channelHealth {
  listings { channelId channelName sku listed shouldList pending desiredAt pushedAt attempts nextAttemptAt lastError }
  incidents { channelId externalOrderId sku cancelState cancelAttempts lastError createdAt cancelledAt } } }`;
const RETRY = `mutation Retry($input: RetryChannelPushInput!) { retryChannelPush(input: $input) { listing { sku pending } userErrors { code message } } }`;

/** Push lag: while pending, how long since the change asked for it; once pushed, how long that push took. */
function lag(l, now) {
  const from = new Date(l.desiredAt).getTime();
  if (l.pending) return `waiting ${ago(now - from)}`;
  return l.pushedAt ? `in sync (took ${ago(new Date(l.pushedAt).getTime() - from)})` : 'never pushed';
}

export function ChannelsPanel({ now }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState(null);
  const load = async () => {
    const r = await gql(HEALTH);
    if (r.data) {
      setData(r.data.channelHealth);
      setError(null);
    } else setError(errorOf(r));
  };
  usePoll(load, 3000);
  const retry = async (l) => {
    const r = await gql(RETRY, { input: { channelId: l.channelId, sku: l.sku } });
    const p = r.data?.retryChannelPush;
    if (!p) setMsg({ bad: true, text: errorOf(r) || 'no answer' });
    else if (p.userErrors.length) setMsg({ bad: true, text: `Refused: ${userErrorText(p.userErrors)}` });
    else setMsg({ bad: false, text: `Push of ${l.sku} to ${l.channelName} sent again.` });
    load();
  };
  return html`<section class="panel" id="channels" aria-labelledby="channels-title">
    <h2 id="channels-title">Channels</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <p class=${`msg ${msg ? (msg.bad ? 'bad' : 'good') : ''}`} role="status" id="channels-msg">${msg ? msg.text : ''}</p>
    <div class="scroll" tabindex="0" role="region" aria-label="Marketplace listings">
      <table>
        <thead><tr><th scope="col">Marketplace</th><th scope="col">SKU</th><th scope="col">Listed</th><th scope="col">Should list</th>
          <th scope="col">Push</th><th scope="col">Last error</th><th scope="col"></th></tr></thead>
        <tbody>
          ${(data?.listings ?? []).map(
            (
              l,
            ) => html`<tr key=${`${l.channelId}/${l.sku}`} id=${`listing-${l.channelId}-${l.sku}`} class=${l.listed !== l.shouldList ? 'drift' : ''}>
              <th scope="row">${l.channelName}</th><td>${l.sku}</td><td>${l.listed ?? '-'}</td><td>${l.shouldList}</td>
              <td>${lag(l, now)}${l.attempts ? ` · ${l.attempts} failed` : ''}</td><td class="error">${l.lastError ?? ''}</td>
              <td>${
                l.pending
                  ? html`<button type="button" class="small" aria-label=${`Retry push of ${l.sku} to ${l.channelName}`} onClick=${() => retry(l)}>Retry push</button>`
                  : null
              }</td>
            </tr>`,
          )}
          ${data && data.listings.length === 0 ? html`<tr><td colspan="7">No marketplace channel lists anything.</td></tr>` : null}
        </tbody>
      </table>
    </div>
    <h3>Oversell incidents</h3>
    <div class="scroll" tabindex="0" role="region" aria-label="Oversell incidents">
      <table>
        <thead><tr><th scope="col">When</th><th scope="col">Marketplace</th><th scope="col">Order</th><th scope="col">SKU</th><th scope="col">Cancellation</th></tr></thead>
        <tbody>
          ${(data?.incidents ?? []).map(
            (i) => html`<tr key=${`${i.channelId}/${i.externalOrderId}`}>
              <th scope="row">${time(i.createdAt)}</th><td>${i.channelId}</td><td>${i.externalOrderId}</td><td>${i.sku}</td>
              <td>${i.cancelState === 'DONE' ? `cancelled ${time(i.cancelledAt)}` : `pending (${i.cancelAttempts} tries${i.lastError ? `: ${i.lastError}` : ''})`}</td>
            </tr>`,
          )}
          ${data && data.incidents.length === 0 ? html`<tr><td colspan="5">No oversells.</td></tr>` : null}
        </tbody>
      </table>
    </div>
  </section>`;
}
