// A shopper's product page: availability live, a quantity bounded by the purchase limit, Reserve then Pay, the hold
// kept across reloads (this tab's sessionStorage holds the order id and its token), the order number and a receipt.
(() => {
  const { cfg, key, gql, connect, buyerToken } = window.lastunitApi;
  const ui = window.lastunitUi;
  const $ = ui.$;
  if (!key) return ui.needKey('public');
  const subscribe = connect(ui.setLive);
  const sku = cfg.sku;
  const buy = $('buy'),
    pay = $('pay'),
    release = $('release'),
    status = $('status'),
    qty = $('qty'),
    receipt = $('receipt');
  const ORDER =
    'id status updatedAt reservation { state expiresAt } rejection { code message } ' +
    'lines { sku quantity unitPrice { amount currencyCode } } total { amount currencyCode } payment { state provider reference }';
  const CHECKING = ['PROCESSING', 'AWAITING_PAYMENT'];

  // the customerId sent without a buyer token (no shop backend): any value, the limits count this address then
  const customerId = localStorage.getItem('lastunit.customer') || crypto.randomUUID();
  localStorage.setItem('lastunit.customer', customerId);
  // sessionStorage, this tab only: the order this page placed ({ id, token }: a public key sees an order only with the
  // token placeOrder handed out), and an attempt whose answer never came ({ key, quantity }: the idempotency key minted
  // on the tap, sent again by "Try again" so it can never order twice).
  const slot = (name) => ({
    get: () => {
      try {
        return JSON.parse(sessionStorage.getItem(name));
      } catch (e) {
        return null;
      }
    },
    set: (v) => sessionStorage.setItem(name, JSON.stringify(v)),
    clear: () => sessionStorage.removeItem(name),
  });
  const placed = slot(`lastunit.order.${sku}`);
  const pending = slot(`lastunit.pending.${sku}`);

  let product = null,
    available = 0,
    order = null,
    lost = false,
    timer = null,
    stopOrderSub = null,
    poll = null;
  const holding = () => !!order && (order.status === 'RESERVED' || CHECKING.includes(order.status));
  const heldUnits = () => (order ? order.lines.filter((l) => l.sku === sku).reduce((n, l) => n + l.quantity, 0) : 0);
  const tokenOf = () => placed.get()?.token || null;

  function say(text, tone) {
    status.textContent = text;
    status.className = `status${tone ? ` ${tone}` : ''}`;
  }

  // The most one order may ask for: what is left, the product's purchase limit, and the server's line limit.
  function maxQuantity() {
    const limit = product && product.purchaseLimit !== null ? product.purchaseLimit : cfg.maxLineQuantity;
    return Math.max(0, Math.min(available, limit, cfg.maxLineQuantity));
  }
  function renderQuantity() {
    const max = maxQuantity(),
      want = Number(qty.value) || 1;
    if (qty.options.length !== Math.max(1, max))
      qty.replaceChildren(...Array.from({ length: Math.max(1, max) }, (_, i) => new Option(String(i + 1))));
    qty.value = String(Math.min(want, Math.max(1, max)));
    $('quantity').classList.toggle('hidden', !product || holding() || max < 1);
    $('limit').textContent =
      product && product.purchaseLimit !== null ? `Limit ${product.purchaseLimit} per customer` : '';
  }
  // The holder's badge says the units are theirs; everyone else's says what is left.
  function renderBadge() {
    if (!holding()) return ui.paintAvailability({ sku, available, soldOut: available === 0 });
    const n = heldUnits();
    $(`badge-${sku}`).textContent = 'Reserved for you';
    $(`badge-${sku}`).className = 'badge mine';
    $(`units-${sku}`).textContent =
      `${n === 1 ? '1 unit' : `${n} units`} held for you${available > 0 ? `, ${available} more left` : ''}`;
  }
  // A shopper who lost the race hears what is true now: sold out, or back on sale after all.
  function renderLost() {
    if (!lost) return;
    if (available === 0) say('Sorry, someone else got the last one: it is sold out. Nothing was charged.', 'bad');
    else say(`It is back on sale: ${ui.unitsLeft(available)}. Tap Reserve to try again.`, 'good');
  }
  function refresh() {
    const retry = !!pending.get();
    buy.disabled = holding() || (available === 0 && !retry);
    buy.textContent = retry
      ? 'Try again'
      : available === 0
        ? 'Sold out'
        : order && order.status === 'CONFIRMED'
          ? 'Reserve another'
          : 'Reserve';
    buy.classList.toggle('hidden', !!order && order.status === 'RESERVED'); // two steps: Reserve holds, Pay pays the hold
    pay.classList.toggle('hidden', order?.status !== 'RESERVED');
    release.classList.toggle('hidden', order?.status !== 'RESERVED');
    receipt.classList.toggle('hidden', order?.status !== 'CONFIRMED');
    renderQuantity();
    renderBadge();
  }
  document.addEventListener('availability', (e) => {
    if (e.detail.sku !== sku) return;
    available = e.detail.available;
    refresh();
    renderLost();
  });

  function showReceipt(o) {
    const name = (s) => (s === sku && product ? product.name : s);
    receipt.innerHTML =
      '<h2>Receipt</h2><p>Order number <code id="order-number"></code></p><table><tbody></tbody><tfoot><tr>' +
      '<th>Total</th><th class="amount" id="receipt-total"></th></tr></tfoot></table><p class="paid"></p>';
    receipt.querySelector('#order-number').textContent = o.id;
    receipt.querySelector('tbody').append(
      ...o.lines.map((l) => {
        const tr = document.createElement('tr');
        tr.innerHTML = '<td></td><td class="amount"></td>';
        tr.cells[0].textContent = `${name(l.sku)} × ${l.quantity}`;
        tr.cells[1].textContent = ui.money({
          amount: l.unitPrice.amount * l.quantity,
          currencyCode: l.unitPrice.currencyCode,
        });
        return tr;
      }),
    );
    receipt.querySelector('#receipt-total').textContent = ui.money(o.total);
    const p = o.payment;
    receipt.querySelector('.paid').textContent =
      'Paid ' +
      new Date(o.updatedAt).toLocaleString() +
      (p ? ` with ${p.provider}${p.reference ? ` (reference ${p.reference})` : ''}` : '') +
      '. Quote the order number if you contact the shop.';
  }

  function showOrder(o) {
    order = o;
    clearInterval(timer);
    if (!o) {
      placed.clear();
      refresh();
      return;
    }
    lost = false;
    if (CHECKING.includes(o.status)) {
      say('Checking whether your order was accepted...');
      watch(o.id);
    } else if (o.status === 'RESERVED') {
      const until = new Date(o.reservation.expiresAt).getTime();
      const n = heldUnits();
      const tick = () => {
        const s = Math.max(0, Math.round((until - Date.now()) / 1000));
        status.className = 'status good';
        status.innerHTML =
          'It is yours: ' +
          (n === 1 ? '1 unit' : `${n} units`) +
          ' reserved for you. The hold ends in <span class="countdown"></span> unless you pay.';
        status.querySelector('.countdown').textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
      };
      tick();
      timer = setInterval(tick, 1000);
      watch(o.id);
    } else {
      stopWatching();
      const code = o.rejection?.code;
      if (o.status === 'CONFIRMED') {
        say(`Paid. ${heldUnits() === 1 ? 'The unit is' : 'The units are'} yours: your receipt is below.`, 'good');
        showReceipt(o);
      } else if (o.status === 'REJECTED' && (code === 'SOLD_OUT' || code === 'INSUFFICIENT_STOCK')) {
        placed.clear();
        order = null;
        lost = true;
        renderLost();
      } else {
        placed.clear();
        const words = {
          CANCELLED: ['You released it. The unit is back on sale.', ''],
          EXPIRED: ['Your hold ran out, so the unit went back on sale.', 'bad'],
          REJECTED: [
            'Your order was not accepted: ' + (o.rejection?.message || 'unknown reason') + '. Nothing was charged.',
            'bad',
          ],
        }[o.status] || [o.status, ''];
        say(words[0], words[1]);
      }
    }
    refresh();
  }
  function stopWatching() {
    if (stopOrderSub) stopOrderSub();
    stopOrderSub = null;
    clearInterval(poll);
    poll = null;
  }
  function watch(id) {
    if (stopOrderSub) return;
    const token = tokenOf();
    stopOrderSub = subscribe(
      `subscription($id: ID!, $token: String) { orderStatusChanged(orderId: $id, token: $token) { ${ORDER} } }`,
      { id, token },
      (d) => showOrder(d.orderStatusChanged),
    );
    // and a slow poll, in case an event was missed while the socket was down
    poll = setInterval(
      () =>
        readOrder(id, token)
          .then((o) => o && order && o.status !== order.status && showOrder(o))
          .catch(() => {}),
      3000,
    );
  }
  const readOrder = (id, token) =>
    gql(`query($id: ID!, $token: String) { order(id: $id, token: $token) { ${ORDER} } }`, { id, token }).then(
      (d) => d.order,
    );

  async function placeOrder() {
    let attempt = pending.get();
    if (!attempt) {
      attempt = { key: crypto.randomUUID(), quantity: Number(qty.value) || 1 };
      pending.set(attempt);
    } // minted on the tap
    buy.disabled = true;
    receipt.classList.add('hidden');
    say('Checking whether your order was accepted...');
    try {
      // with the shop's buyer token the order is that customer's (its purchase limit counts them, from any address);
      // a token refused (expired, or the server's secret changed) is renewed once and the same attempt sent again
      const send = (buyer) =>
        gql(
          `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed orderToken order { ${ORDER} } userErrors { code field message } } }`,
          {
            input: {
              idempotencyKey: attempt.key,
              customerId: buyer ? buyer.customerId : customerId,
              buyerToken: buyer ? buyer.token : null,
              lines: [{ sku, quantity: attempt.quantity }],
            },
          },
        ).then((d) => d.placeOrder);
      const tokenRefused = (p) =>
        p.userErrors.some((e) => e.code === 'INVALID_INPUT' && (e.field || []).includes('buyerToken'));
      const buyer = await buyerToken(false);
      let p = await send(buyer);
      if (buyer && tokenRefused(p)) p = await send(await buyerToken(true));
      const err = p.userErrors[0];
      if (err && err.code === 'IN_PROGRESS') {
        setTimeout(placeOrder, 1000);
        return;
      } // same key: still the same order
      pending.clear();
      if (!p.order) {
        say(err ? err.message : 'Something went wrong.', 'bad');
        refresh();
        return;
      }
      if (p.order.status !== 'REJECTED') placed.set({ id: p.order.id, token: p.orderToken || null });
      showOrder(p.order);
    } catch (e) {
      say('We could not reach the shop. Tap "Try again": it is safe, you will not be charged twice.', 'bad');
      refresh();
    }
  }
  buy.addEventListener('click', placeOrder);
  // Step two: pay for the hold (payOrder; the demo pays with the sandbox's approving card). A decline keeps the hold,
  // so the shopper may try again until it runs out; an answer still pending is followed like any order.
  pay.addEventListener('click', async () => {
    pay.disabled = true;
    say('Paying...');
    try {
      const d = await gql(
        `mutation($input: PayOrderInput!) { payOrder(input: $input) { order { ${ORDER} } userErrors { code message } } }`,
        {
          input: {
            orderId: order.id,
            token: tokenOf(),
            payment: { provider: 'sandbox', token: cfg.payToken || 'tok_approve' },
          },
        },
      );
      const p = d.payOrder,
        err = p.userErrors[0];
      if (p.order) showOrder(p.order);
      if (err)
        say(
          err.code === 'PAYMENT_DECLINED'
            ? 'Your card was declined. The unit stays reserved for you: try again.'
            : err.message,
          'bad',
        );
    } catch (e) {
      say('We could not reach the shop; your hold is unchanged. Try again.', 'bad');
    } finally {
      pay.disabled = false;
    }
  });
  release.addEventListener('click', async () => {
    release.disabled = true;
    try {
      const d = await gql(
        `mutation($input: ReleaseReservationInput!) { releaseReservation(input: $input) { order { ${ORDER} } userErrors { code message } } }`,
        { input: { orderId: order.id, token: tokenOf() } },
      );
      const r = d.releaseReservation;
      if (r.userErrors[0] && !r.order) say(r.userErrors[0].message, 'bad');
      else showOrder(r.order);
    } catch (e) {
      say('We could not reach the shop; your hold is unchanged. Try again.', 'bad');
    } finally {
      release.disabled = false;
    }
  });

  const PRODUCT = `sku name purchaseLimit price { amount currencyCode } availability { ${ui.AVAIL} }`;
  gql(`query($sku: String!) { product(sku: $sku) { ${PRODUCT} } }`, { sku })
    .then(async (d) => {
      product = d.product;
      $('price').textContent = ui.money(product.price);
      available = product.availability.available;
      ui.showAvailability(product.availability);
      subscribe(
        `subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { ${ui.AVAIL} } }`,
        { skus: [sku] },
        (d) => ui.showAvailability(d.availabilityChanged),
        // after a (re)connect, read once: events missed while disconnected are not replayed
        () => {
          ui.setLive(true);
          gql(`query($sku: String!) { product(sku: $sku) { availability { ${ui.AVAIL} } } }`, { sku })
            .then((d) => ui.showAvailability(d.product.availability))
            .catch(() => {});
        },
      );
      // a reload keeps the shopper's order: ask the API where it is and show that (Pay, Release, the countdown, the receipt)
      const mine = placed.get();
      if (mine)
        await readOrder(mine.id, mine.token).then(showOrder, () =>
          say('Could not read your order: reload to try again.', 'bad'),
        );
      else if (pending.get())
        say('Your last attempt got no answer. Tap "Try again" to find out: it will not order twice.');
      refresh();
    })
    .catch((e) => say(`Could not load the product: ${e.message}`, 'bad'));
})();
