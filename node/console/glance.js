// A sale at a glance: claims, refusals and holds per second, and the commit-to-delivery lag of live events, over the
// last 15 minutes of this server's own counters (Query.saleActivity), drawn as SVG (no chart library, no inline style).
import { useState } from 'preact/hooks';
import { gql, errorOf } from './api.js';
import { html, usePoll } from './ui.js';

const ACTIVITY = '{ saleActivity(seconds: 900) { at claims refusals holds deliveryLagMs } }';
const SPAN = 900;
const W = 900;
const H = 120;

function Chart({ id, title, samples, series, now, unit }) {
  const max = Math.max(1, ...samples.flatMap((s) => series.map((k) => s[k.key] ?? 0)));
  const x = (s) => W - (now - new Date(s.at).getTime()) / 1000 / (SPAN / W);
  const y = (v) => H - (v / max) * (H - 6);
  const totals = series.map((k) => `${k.label} ${Math.round(samples.reduce((n, s) => n + (s[k.key] ?? 0), 0))}`);
  const label = `${title}, last 15 minutes: ${unit === 'ms' ? `peak ${Math.round(max)} ms` : totals.join(', ')}`;
  return html`<figure class="chart" id=${id}>
    <figcaption>${title} <span class="meta">(${unit === 'ms' ? `peak ${Math.round(max)} ms` : `peak ${max}/s`})</span></figcaption>
    <svg viewBox=${`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label=${label}>
      <line x1="0" y1=${H - 0.5} x2=${W} y2=${H - 0.5} class="axis" />
      ${series.map(
        (k) => html`<polyline class=${`line ${k.key}`} fill="none"
          points=${samples
            .filter((s) => s[k.key] != null)
            .map((s) => `${x(s).toFixed(1)},${y(s[k.key]).toFixed(1)}`)
            .join(' ')} />`,
      )}
    </svg>
    <ul class="legend">${series.map((k) => html`<li class=${k.key}>${k.label}</li>`)}<li class="meta">15 min ago → now</li></ul>
  </figure>`;
}

export function GlancePanel() {
  const [samples, setSamples] = useState([]);
  const [error, setError] = useState(null);
  const [now, setNow] = useState(Date.now());
  usePoll(async () => {
    const r = await gql(ACTIVITY);
    if (r.data) {
      setSamples(r.data.saleActivity);
      setNow(Date.now());
      setError(null);
    } else setError(errorOf(r));
  }, 1000);
  const last = samples.slice(-10);
  const perSecond = (k) => (last.length ? (last.reduce((n, s) => n + s[k], 0) / last.length).toFixed(1) : '0');
  return html`<section class="panel" id="glance" aria-labelledby="glance-title">
    <h2 id="glance-title">A sale at a glance</h2>
    ${error ? html`<p class="msg bad" role="alert">${error}</p>` : null}
    <p class="meta" id="glance-now">Last 10 s: ${perSecond('claims')} claims/s, ${perSecond('holds')} holds/s, ${perSecond('refusals')} refusals/s (this server)</p>
    <${Chart} id="chart-orders" title="placeOrder per second" samples=${samples} now=${now} unit="n"
      series=${[
        { key: 'claims', label: 'claims' },
        { key: 'holds', label: 'holds' },
        { key: 'refusals', label: 'refusals' },
      ]} />
    <${Chart} id="chart-lag" title="Commit-to-delivery lag" samples=${samples} now=${now} unit="ms"
      series=${[{ key: 'deliveryLagMs', label: 'mean lag (ms)' }]} />
  </section>`;
}
