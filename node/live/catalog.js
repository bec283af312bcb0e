// The catalog: every product with a live badge.
(() => {
  const { cfg, key, gql, connect } = window.lastunitApi;
  const ui = window.lastunitUi;
  if (!key) return ui.needKey('public');
  const subscribe = connect(ui.setLive);
  gql(
    `query($skus: [String!]!) { products(skus: $skus) { sku name price { amount currencyCode } availability { ${ui.AVAIL} } } }`,
    { skus: cfg.skus },
  )
    .then((d) => {
      const list = ui.$('catalog');
      list.innerHTML = '';
      for (const p of d.products.filter(Boolean)) {
        const li = document.createElement('li');
        li.innerHTML = `<a href="/products/${encodeURIComponent(p.sku)}"><div class="card"><h2></h2><div class="row"><span class="price"></span>
          <span class="badge" id="badge-${p.sku}"></span><span class="units" id="units-${p.sku}"></span></div></div></a>`;
        li.querySelector('h2').textContent = p.name;
        li.querySelector('.price').textContent = ui.money(p.price);
        list.appendChild(li);
        ui.showAvailability(p.availability);
      }
      if (cfg.skus.length)
        subscribe(
          `subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { ${ui.AVAIL} } }`,
          { skus: cfg.skus },
          (d) => ui.showAvailability(d.availabilityChanged),
          () => ui.setLive(true),
        );
    })
    .catch((e) => {
      ui.$('catalog').textContent = `Could not load the catalog: ${e.message}`;
    });
})();
