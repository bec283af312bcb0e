// The admin view of a product: its availability, live, and what each marketplace channel lists of it (docs/channels.md),
// read now, again after every availability change and every 2 s (a marketplace acknowledges a push a moment after).
(() => {
  const { cfg, key, gql, getJson, connect } = window.lastunitApi;
  const ui = window.lastunitUi;
  if (!key) return ui.needKey('admin');
  const sku = cfg.sku;
  const subscribe = connect(ui.setLive);
  const rows = ui.$('channel-rows');

  function cell(v) {
    const td = document.createElement('td');
    td.textContent = String(v);
    return td;
  }
  function showChannels() {
    getJson(`/admin/products/${encodeURIComponent(sku)}/channels`)
      .then((d) => {
        if (!d.channels) {
          rows.replaceChildren(Object.assign(document.createElement('tr'), { innerHTML: '<td colspan="4"></td>' }));
          rows.querySelector('td').textContent = d.error;
          return;
        }
        rows.replaceChildren(
          ...(d.channels.length
            ? d.channels.map((ch) => {
                const tr = document.createElement('tr');
                tr.id = `channel-${ch.id}`;
                tr.append(
                  ...[
                    ch.name,
                    ch.listed === null ? '-' : ch.listed,
                    ch.desired,
                    ch.pending ? 'pushing...' : 'in sync',
                  ].map(cell),
                );
                return tr;
              })
            : [Object.assign(document.createElement('tr'), { innerHTML: '<td colspan="4">none</td>' })]),
        );
      })
      .catch(() => {});
  }
  showChannels();
  setInterval(showChannels, 2000);
  document.addEventListener('availability', () => setTimeout(showChannels, 300));

  const read = () =>
    gql(`query($sku: String!) { product(sku: $sku) { availability { ${ui.AVAIL} } } }`, { sku }).then((d) =>
      ui.showAvailability(d.product.availability),
    );
  read().catch(() => {});
  subscribe(
    `subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { ${ui.AVAIL} } }`,
    { skus: [sku] },
    (d) => ui.showAvailability(d.availabilityChanged),
    () => {
      ui.setLive(true);
      read().catch(() => {});
    },
  );
})();
