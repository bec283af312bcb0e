// The shop's console (docs/console.md): sign in with an admin key (kept in this tab's sessionStorage only), then the
// panels. Bundled with preact, htm and graphql-ws by node/console-page.ts; every action is the GraphQL API's own.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { errorOf, gql, liveClient, session } from './api.js';
import { html, useNow } from './ui.js';
import { StockPanel, useStock } from './stock.js';
import { HoldsPanel } from './holds.js';
import { ChannelsPanel } from './channels.js';
import { GlancePanel } from './glance.js';
import { DeliveriesPanel, DropsPanel } from './later.js';

const PANELS = [
  ['stock', 'Stock'],
  ['holds', 'Holds and payments'],
  ['channels', 'Channels'],
  ['glance', 'A sale at a glance'],
  ['deliveries', 'Deliveries'],
  ['drops', 'Drops'],
];

function SignIn({ onSignedIn }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    // the key is checked with an admin-only read before it is kept
    const r = await gql('{ stockLevels(first: 1) { sku } }', {}, key.trim()).catch((err) => ({ errors: [err] }));
    setBusy(false);
    if (r.data) {
      session.signIn(key.trim());
      onSignedIn(key.trim());
    } else setError(errorOf(r) || 'sign-in failed');
  };
  return html`<main class="signin">
    <h1>lastunit console</h1>
    <form onSubmit=${submit} aria-describedby="signin-help">
      <label for="admin-key">Admin API key</label>
      <input id="admin-key" name="admin-key" type="password" autocomplete="off" required value=${key}
        onInput=${(e) => setKey(e.currentTarget.value)} />
      <button type="submit" disabled=${busy}>Sign in</button>
      <p id="signin-help" class="meta">Kept in this tab only (sessionStorage): closing the tab signs you out.</p>
      <p class="msg bad" role="alert" id="signin-error">${error ?? ''}</p>
    </form>
  </main>`;
}

function Console({ adminKey, onSignOut }) {
  const [client, setClient] = useState(null);
  const [live, setLive] = useState(false);
  const [refresh, setRefresh] = useState(0);
  const now = useNow();
  useEffect(() => {
    const c = liveClient(adminKey, setLive);
    setClient(c);
    return () => c.dispose();
  }, [adminKey]);
  // a stock change also moves holds: the holds panel re-reads with it
  const stock = useStock(client, () => setRefresh((n) => n + 1));
  return html`<div class="console">
    <a class="skip" href="#panels">Skip to the panels</a>
    <header>
      <h1>lastunit console</h1>
      <p class=${`live ${live ? 'on' : 'off'}`} id="live" role="status">${live ? 'Live' : 'Connecting...'}</p>
      <button type="button" class="secondary small" onClick=${onSignOut}>Sign out</button>
    </header>
    <nav aria-label="Panels"><ul>${PANELS.map(([id, name]) => html`<li><a href=${`#${id}`}>${name}</a></li>`)}</ul></nav>
    <main id="panels" tabindex="-1">
      <${StockPanel} stock=${stock} />
      <${HoldsPanel} now=${now} refresh=${refresh} />
      <${ChannelsPanel} now=${now} />
      <${GlancePanel} />
      <${DeliveriesPanel} />
      <${DropsPanel} />
    </main>
  </div>`;
}

function App() {
  const [key, setKey] = useState(session.key());
  if (!key) return html`<${SignIn} onSignedIn=${setKey} />`;
  return html`<${Console} adminKey=${key} onSignOut=${() => {
    session.signOut();
    setKey(null);
  }} />`;
}

render(html`<${App} />`, document.getElementById('app'));
