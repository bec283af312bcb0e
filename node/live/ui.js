// What the live pages share: lookups, money, the live line, and availability badges that keep only the newest event.
(() => {
  const $ = (id) => document.getElementById(id);
  const money = (m) =>
    new Intl.NumberFormat(undefined, { style: 'currency', currency: m.currencyCode }).format(m.amount / 100);
  const unitsLeft = (n) => (n === 1 ? '1 unit left' : `${n} units left`);
  const AVAIL = 'sku available soldOut version updatedAt';

  function setLive(on, text) {
    const el = $('live');
    if (el) el.textContent = text || (on ? 'Live: stock updates as it changes.' : 'Reconnecting to live updates...');
  }

  function paintAvailability(a) {
    const badge = $(`badge-${a.sku}`),
      units = $(`units-${a.sku}`);
    if (badge) {
      badge.textContent = a.soldOut ? 'Sold out' : 'Available';
      badge.className = `badge ${a.soldOut ? 'out' : 'in'}`;
    }
    if (units) units.textContent = a.soldOut ? 'No units left' : unitsLeft(a.available);
  }

  // Events of one SKU may arrive out of order or twice: keep the highest version seen, drop the rest.
  const versions = {};
  function showAvailability(a) {
    if (versions[a.sku] !== undefined && a.version <= versions[a.sku]) return;
    versions[a.sku] = a.version;
    paintAvailability(a);
    document.dispatchEvent(new CustomEvent('availability', { detail: a }));
  }

  function needKey(what) {
    document.querySelector('main').innerHTML =
      '<div class="card"><h1>An API key is needed</h1><p>Open this page with <code>?key=&lt;' +
      what +
      ' key&gt;</code>; it is kept in this browser.</p></div>';
  }

  window.lastunitUi = { $, money, unitsLeft, AVAIL, setLive, paintAvailability, showAvailability, needKey };
})();
