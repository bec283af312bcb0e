// The live product page and catalog: plain JS, no framework. Talks GraphQL over HTTP and graphql-ws
// (the graphql-transport-ws protocol, written out below) on the same /graphql endpoint.
(function () {
  'use strict';
  const cfg = window.LASTUNIT || {};
  const params = new URLSearchParams(location.search);
  if (params.get('key')) localStorage.setItem('lastunit.key', params.get('key'));
  const key = cfg.key || localStorage.getItem('lastunit.key');
  const $ = (id) => document.getElementById(id);
  const money = (m) => new Intl.NumberFormat(undefined, { style: 'currency', currency: m.currencyCode }).format(m.amount / 100);

  async function gql(query, variables) {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + key },
      body: JSON.stringify({ query, variables }),
    });
    const body = await res.json();
    if (body.errors) throw new Error(body.errors[0].message);
    return body.data;
  }

  // graphql-transport-ws: connection_init with the key, then subscribe/next/complete; reconnects with backoff.
  function live() {
    let ws, ready = false, nextId = 1, attempt = 0;
    const subs = new Map();
    const send = (m) => ws && ws.readyState === 1 && ws.send(JSON.stringify(m));
    function open() {
      ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
      ws.onopen = () => send({ type: 'connection_init', payload: { authorization: 'Bearer ' + key } });
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.type === 'connection_ack') {
          ready = true; attempt = 0;
          setLive(true);
          for (const [id, s] of subs) { send({ id, type: 'subscribe', payload: s.payload }); s.onReconnect && s.onReconnect(); }
        } else if (m.type === 'next' && subs.has(m.id)) subs.get(m.id).onData(m.payload.data);
        else if (m.type === 'ping') send({ type: 'pong' });
      };
      ws.onclose = (ev) => {
        ready = false;
        setLive(false);
        if (ev.code === 4403) return setLive(false, 'Live updates refused: this page needs a public API key (?key=...).');
        setTimeout(open, Math.min(10000, 500 * 2 ** attempt++));
      };
    }
    open();
    return function subscribe(query, variables, onData, onReconnect) {
      const id = String(nextId++);
      subs.set(id, { payload: { query, variables }, onData, onReconnect });
      if (ready) { send({ id, type: 'subscribe', payload: { query, variables } }); onReconnect && onReconnect(); }
      return () => { subs.delete(id); send({ id, type: 'complete' }); };
    };
  }
  function setLive(on, text) {
    const el = $('live');
    if (el) el.textContent = text || (on ? 'Live: stock updates as it changes.' : 'Reconnecting to live updates...');
  }

  const AVAIL = 'sku available soldOut version updatedAt';
  const ORDER = 'id status reservation { state expiresAt } rejection { code message }';

  function showAvailability(a, versions) {
    if (versions[a.sku] !== undefined && a.version <= versions[a.sku]) return; // a repeat or an older event
    versions[a.sku] = a.version;
    const badge = $('badge-' + a.sku), units = $('units-' + a.sku);
    if (badge) { badge.textContent = a.soldOut ? 'Sold out' : 'Available'; badge.className = 'badge ' + (a.soldOut ? 'out' : 'in'); }
    if (units) units.textContent = a.soldOut ? 'No units left' : a.available + (a.available === 1 ? ' unit left' : ' units left');
    document.dispatchEvent(new CustomEvent('availability', { detail: a }));
  }

  if (!key) {
    document.querySelector('main').innerHTML =
      '<div class="card"><h1>An API key is needed</h1><p>Open this page with <code>?key=&lt;public key&gt;</code>; it is kept in this browser.</p></div>';
    return;
  }
  const subscribe = live();
  const versions = {};

  if (cfg.page === 'catalog') {
    gql(`query($skus: [String!]!) { products(skus: $skus) { sku name price { amount currencyCode } availability { ${AVAIL} } } }`, { skus: cfg.skus })
      .then((d) => {
        const list = $('catalog');
        list.innerHTML = '';
        for (const p of d.products.filter(Boolean)) {
          const li = document.createElement('li');
          li.innerHTML = `<a href="/products/${encodeURIComponent(p.sku)}"><div class="card"><h2></h2><div class="row"><span class="price"></span>
            <span class="badge" id="badge-${p.sku}"></span><span class="units" id="units-${p.sku}"></span></div></div></a>`;
          li.querySelector('h2').textContent = p.name;
          li.querySelector('.price').textContent = money(p.price);
          list.appendChild(li);
          showAvailability(p.availability, versions);
        }
        if (cfg.skus.length) subscribe(`subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { ${AVAIL} } }`, { skus: cfg.skus },
          (d) => showAvailability(d.availabilityChanged, versions), () => setLive(true));
      })
      .catch((e) => { $('catalog').textContent = 'Could not load the catalog: ' + e.message; });
    return;
  }

  // The product page.
  const sku = cfg.sku;
  const buy = $('buy'), pay = $('pay'), release = $('release'), status = $('status');
  let available = 0, order = null, timer = null, stopOrderSub = null, poll = null;
  const customerId = localStorage.getItem('lastunit.customer') || crypto.randomUUID();
  localStorage.setItem('lastunit.customer', customerId);
  const pendingKey = 'lastunit.pending.' + sku; // the idempotency key of an attempt whose answer we have not seen
  // A public key sees an order only with its token, handed out once by placeOrder: kept in this browser, per order.
  const tokenOf = (id) => localStorage.getItem('lastunit.token.' + id);

  function say(text, tone) { status.textContent = text; status.className = 'status' + (tone ? ' ' + tone : ''); }
  function refreshButtons() {
    const held = order && order.status === 'RESERVED';
    const checking = order && (order.status === 'PROCESSING' || order.status === 'AWAITING_PAYMENT');
    buy.disabled = held || checking || (available === 0 && !sessionStorage.getItem(pendingKey));
    buy.textContent = sessionStorage.getItem(pendingKey) ? 'Try again' : available === 0 ? 'Sold out' : 'Reserve';
    buy.classList.toggle('hidden', !!held); // two steps: Reserve holds the unit, then Pay pays for the hold
    pay.classList.toggle('hidden', !held);
    release.classList.toggle('hidden', !held);
  }
  document.addEventListener('availability', (e) => { if (e.detail.sku === sku) { available = e.detail.available; refreshButtons(); } });

  function showOrder(o, rejection) {
    order = o;
    clearInterval(timer);
    if (!o) { refreshButtons(); return; }
    if (o.status === 'PROCESSING' || o.status === 'AWAITING_PAYMENT') {
      say('Checking whether your order was accepted...');
      watch(o.id);
    } else if (o.status === 'RESERVED') {
      const until = new Date(o.reservation.expiresAt).getTime();
      const tick = () => {
        const s = Math.max(0, Math.round((until - Date.now()) / 1000));
        say('', 'good');
        status.innerHTML = 'It is yours: reserved for you. The hold ends in <span class="countdown"></span> unless you pay.';
        status.querySelector('.countdown').textContent = Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
      };
      tick();
      timer = setInterval(tick, 1000);
      watch(o.id);
    } else {
      stopWatching();
      const words = {
        CONFIRMED: ['Paid. The unit is yours.', 'good'],
        CANCELLED: ['You released it. The unit is back on sale.', ''],
        EXPIRED: ['Your hold ran out, so the unit went back on sale.', 'bad'],
        REJECTED: [rejection && rejection.code === 'SOLD_OUT' || o.rejection && o.rejection.code === 'SOLD_OUT'
          ? 'Sorry, someone else got the last one: it is sold out. Nothing was charged.'
          : 'Your order was not accepted: ' + ((o.rejection && o.rejection.message) || 'unknown reason') + '. Nothing was charged.', 'bad'],
      }[o.status] || [o.status, ''];
      say(words[0], words[1]);
    }
    refreshButtons();
  }
  function stopWatching() { if (stopOrderSub) stopOrderSub(); stopOrderSub = null; clearInterval(poll); poll = null; }
  function watch(id) {
    if (stopOrderSub) return;
    const token = tokenOf(id);
    stopOrderSub = subscribe(`subscription($id: ID!, $token: String) { orderStatusChanged(orderId: $id, token: $token) { ${ORDER} } }`, { id, token },
      (d) => showOrder(d.orderStatusChanged));
    // and a slow poll, in case an event was missed while the socket was down
    poll = setInterval(() => gql(`query($id: ID!, $token: String) { order(id: $id, token: $token) { ${ORDER} } }`, { id, token }).then((d) => d.order && d.order.status !== order.status && showOrder(d.order)).catch(() => {}), 3000);
  }

  async function placeOrder() {
    let idem = sessionStorage.getItem(pendingKey);
    if (!idem) { idem = crypto.randomUUID(); sessionStorage.setItem(pendingKey, idem); } // minted on click, reused on retry
    buy.disabled = true;
    say('Checking whether your order was accepted...');
    try {
      const d = await gql(`mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed orderToken order { ${ORDER} } userErrors { code message } } }`,
        { input: { idempotencyKey: idem, customerId, lines: [{ sku, quantity: 1 }] } });
      const p = d.placeOrder, err = p.userErrors[0];
      if (err && err.code === 'IN_PROGRESS') { setTimeout(placeOrder, 1000); return; } // same key: still the same order
      sessionStorage.removeItem(pendingKey);
      if (p.order && p.orderToken) localStorage.setItem('lastunit.token.' + p.order.id, p.orderToken);
      if (!p.order) { say(err ? err.message : 'Something went wrong.', 'bad'); refreshButtons(); return; }
      showOrder(p.order, err);
    } catch (e) {
      say('We could not reach the shop. Tap "Try again": it is safe, you will not be charged twice.', 'bad');
      refreshButtons();
    }
  }
  buy.addEventListener('click', placeOrder);
  // Step two: pay for the held unit (payOrder; the demo pays with the sandbox's approving card). A decline keeps the
  // hold, so the shopper may try again until it runs out; an answer still pending is followed like any order.
  pay.addEventListener('click', async () => {
    pay.disabled = true;
    say('Paying...');
    try {
      const d = await gql(`mutation($input: PayOrderInput!) { payOrder(input: $input) { order { ${ORDER} } userErrors { code message } } }`,
        { input: { orderId: order.id, token: tokenOf(order.id), payment: { provider: 'sandbox', token: cfg.payToken || 'tok_approve' } } });
      const p = d.payOrder, err = p.userErrors[0];
      if (p.order) showOrder(p.order, err);
      if (err) say(err.code === 'PAYMENT_DECLINED' ? 'Your card was declined. The unit stays reserved for you: try again.' : err.message, 'bad');
    } catch (e) {
      say('We could not reach the shop; your hold is unchanged. Try again.', 'bad');
    } finally { pay.disabled = false; }
  });
  release.addEventListener('click', async () => {
    release.disabled = true;
    try {
      const d = await gql(`mutation($input: ReleaseReservationInput!) { releaseReservation(input: $input) { order { ${ORDER} } userErrors { code message } } }`,
        { input: { orderId: order.id, token: tokenOf(order.id) } });
      const r = d.releaseReservation;
      if (r.userErrors[0] && !r.order) say(r.userErrors[0].message, 'bad');
      else showOrder(r.order);
    } catch (e) {
      say('We could not reach the shop; your hold is unchanged. Try again.', 'bad');
    } finally { release.disabled = false; }
  });

  // Per-channel listed quantities (docs/channels.md): read now, again after every availability change and every 2 s
  // (a marketplace acknowledges a push a moment after the change the page heard about).
  const channelRows = $('channel-rows');
  function showChannels() {
    if (!channelRows) return;
    // the same key as GraphQL: the route answers 401 without one
    fetch('/products/' + encodeURIComponent(sku) + '/channels', { headers: { authorization: 'Bearer ' + key } }).then((r) => r.json()).then((d) => {
      if (!d.channels) return;
      channelRows.replaceChildren(...(d.channels.length ? d.channels.map((ch) => {
        const tr = document.createElement('tr');
        tr.id = 'channel-' + ch.id;
        for (const v of [ch.name, ch.listed === null ? '-' : ch.listed, ch.desired, ch.pending ? 'pushing...' : 'in sync']) {
          const td = document.createElement('td');
          td.textContent = String(v);
          tr.appendChild(td);
        }
        return tr;
      }) : [Object.assign(document.createElement('tr'), { innerHTML: '<td colspan="4">none</td>' })]));
    }).catch(() => {});
  }
  if (channelRows) {
    showChannels();
    setInterval(showChannels, 2000);
    document.addEventListener('availability', (e) => { if (e.detail.sku === sku) setTimeout(showChannels, 300); });
  }

  gql(`query($sku: String!) { product(sku: $sku) { sku name price { amount currencyCode } availability { ${AVAIL} } } }`, { sku })
    .then((d) => {
      if (!d.product) { $('name').textContent = 'No such product'; return; }
      $('name').textContent = d.product.name;
      $('price').textContent = money(d.product.price);
      document.title = d.product.name + ' - lastunit';
      showAvailability(d.product.availability, versions);
      subscribe(`subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { ${AVAIL} } }`, { skus: [sku] },
        (d) => showAvailability(d.availabilityChanged, versions),
        // after a (re)connect, read once: events missed while disconnected are not replayed
        () => { setLive(true); gql(`query($sku: String!) { product(sku: $sku) { availability { ${AVAIL} } } }`, { sku }).then((d) => showAvailability(d.product.availability, versions)).catch(() => {}); });
      if (sessionStorage.getItem(pendingKey)) say('Your last attempt got no answer. Tap "Try again" to find out: it will not order twice.');
      refreshButtons();
    })
    .catch((e) => say('Could not load the product: ' + e.message, 'bad'));
})();
