// Deliveries (webhook endpoints) and drops: panels for features this server's API may not have yet. Each asks the API
// whether its root field exists and says "not available on this server" when it does not; nothing is made up.
import { useEffect, useState } from 'preact/hooks';
import { hasQueryField } from './api.js';
import { html } from './ui.js';

function Slot({ id, title, field, what }) {
  const [has, setHas] = useState(null);
  useEffect(() => {
    hasQueryField(field).then(setHas, () => setHas(false));
  }, []);
  return html`<section class="panel slot" id=${id} aria-labelledby=${`${id}-title`}>
    <h2 id=${`${id}-title`}>${title}</h2>
    <p class="meta" id=${`${id}-state`}>${
      has === null
        ? 'Checking this server...'
        : has
          ? `This server's API has ${field}; this console does not show ${what} yet (use the API).`
          : `Not available on this server: its API has no ${field} field.`
    }</p>
  </section>`;
}

export const DeliveriesPanel = () =>
  html`<${Slot} id="deliveries" title="Deliveries" field="webhookEndpoints" what="webhook endpoints and their deliveries" />`;
export const DropsPanel = () => html`<${Slot} id="drops" title="Drops" field="drops" what="drops and their queues" />`;
