// Every request the live pages make, in one place: GraphQL over HTTP, graphql-ws (the graphql-transport-ws protocol,
// written out below) on the same /graphql endpoint, the admin view's JSON and the shop backend's buyer token
// (POST /live/buyer-token). Each sends authorization() as its key.
(() => {
  const cfg = window.LASTUNIT || {};
  const params = new URLSearchParams(location.search);
  // A shopper's page uses a public key: the host's (demo keys) or one given once in ?key= and kept in this browser.
  // The admin view's key is an admin key: given in ?key= and kept for this tab only.
  const store = cfg.page === 'admin' ? sessionStorage : localStorage;
  const slot = cfg.page === 'admin' ? 'lastunit.adminKey' : 'lastunit.key';
  if (params.get('key')) store.setItem(slot, params.get('key'));
  const key = (cfg.page !== 'admin' && cfg.key) || store.getItem(slot);

  const authorization = () => `Bearer ${key}`;

  async function gql(query, variables) {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: authorization() },
      body: JSON.stringify({ query, variables }),
    });
    const body = await res.json();
    if (body.errors) throw new Error(body.errors[0].message);
    return body.data;
  }

  // The buyer token the shop's backend vouches for this browser with (docs/live.md#buyer-tokens), sent with placeOrder
  // so the purchase and hold limits count that customer rather than this address. Asked for on the first order and
  // kept in memory until it is about to expire, or when asked to renew (placeOrder refused it). null when this host
  // serves no shop backend or it answers no token: the order goes without one and counts by the client's address.
  let buyer = null;
  async function buyerToken(renew) {
    if (!cfg.buyerTokenPath) return null;
    if (!renew && buyer && Date.parse(buyer.expiresAt) - Date.now() > 10000) return buyer;
    const res = await fetch(cfg.buyerTokenPath, {
      method: 'POST',
      headers: { authorization: authorization() },
      credentials: 'same-origin',
    });
    buyer = res.ok ? await res.json() : null;
    return buyer;
  }

  async function getJson(path) {
    const res = await fetch(path, { headers: { authorization: authorization() } });
    return res.json();
  }

  // graphql-transport-ws: connection_init with the key, then subscribe/next/complete; reconnects with backoff.
  // onStatus(connected, text) hears every change of the connection.
  function connect(onStatus) {
    let ws,
      ready = false,
      nextId = 1,
      attempt = 0;
    const subs = new Map();
    const send = (m) => ws && ws.readyState === 1 && ws.send(JSON.stringify(m));
    function open() {
      ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      ws.onopen = () => send({ type: 'connection_init', payload: { authorization: authorization() } });
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.type === 'connection_ack') {
          ready = true;
          attempt = 0;
          onStatus(true);
          for (const [id, s] of subs) {
            send({ id, type: 'subscribe', payload: s.payload });
            s.onReconnect?.();
          }
        } else if (m.type === 'next' && subs.has(m.id)) subs.get(m.id).onData(m.payload.data);
        else if (m.type === 'ping') send({ type: 'pong' });
      };
      ws.onclose = (ev) => {
        ready = false;
        if (ev.code === 4403)
          return onStatus(
            false,
            'Live updates refused: this page needs a ' +
              (cfg.page === 'admin' ? 'n admin' : ' public') +
              ' API key (?key=...).',
          );
        onStatus(false);
        setTimeout(open, Math.min(10000, 500 * 2 ** attempt++));
      };
    }
    open();
    return function subscribe(query, variables, onData, onReconnect) {
      const id = String(nextId++);
      subs.set(id, { payload: { query, variables }, onData, onReconnect });
      if (ready) {
        send({ id, type: 'subscribe', payload: { query, variables } });
        onReconnect?.();
      }
      return () => {
        subs.delete(id);
        send({ id, type: 'complete' });
      };
    };
  }

  window.lastunitApi = { cfg, key, gql, getJson, connect, buyerToken };
})();
