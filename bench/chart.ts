// The SVG chart of `npm run bench` (bench/results/latest.svg; docs/bench.svg, the README's, with --update-docs):
// claims/s by concurrent clients for lastunit, the ceiling and the naive claim (left), and their p50/p99 response times
// (right). Plain SVG, no dependencies.

export type ChartPoint = { clients: number; claimsPerS: number; p50Ms: number; p99Ms: number };
export type ChartSeries = { name: string; color: string; points: ChartPoint[] };

const W = 900;
const H = 360;
const PAD = { l: 64, r: 16, t: 48, b: 56 };
const PANEL_W = (W - 2 * (PAD.l + PAD.r)) / 1;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n >= 10 ? n.toFixed(0) : n.toFixed(1));

/** A "nice" upper bound for an axis. */
function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function panel(
  x0: number,
  title: string,
  yLabel: string,
  clients: number[],
  lines: { color: string; dash?: string; label: string; ys: (number | null)[] }[],
): string {
  const w = PANEL_W / 2 - 24;
  const h = H - PAD.t - PAD.b;
  const max = niceMax(Math.max(1, ...lines.flatMap((l) => l.ys.filter((y): y is number => y !== null))));
  const x = (i: number) => x0 + (clients.length === 1 ? w / 2 : (i * w) / (clients.length - 1));
  const y = (v: number) => PAD.t + h - (v / max) * h;
  const out: string[] = [];
  out.push(`<text x="${x0 + w / 2}" y="${PAD.t - 18}" text-anchor="middle" font-weight="bold">${esc(title)}</text>`);
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4;
    out.push(`<line x1="${x0}" x2="${x0 + w}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${x0 - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${fmt(v)}</text>`);
  }
  clients.forEach((c, i) => {
    out.push(`<text x="${x(i)}" y="${PAD.t + h + 16}" text-anchor="middle" font-size="11">${c}</text>`);
  });
  out.push(
    `<text x="${x0 + w / 2}" y="${PAD.t + h + 34}" text-anchor="middle" font-size="12">concurrent clients</text>`,
  );
  out.push(
    `<text transform="translate(${x0 - 48},${PAD.t + h / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(yLabel)}</text>`,
  );
  for (const l of lines) {
    const pts = l.ys.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
    out.push(
      `<polyline fill="none" stroke="${l.color}" stroke-width="2"${l.dash ? ` stroke-dasharray="${l.dash}"` : ''} points="${pts.join(' ')}"/>`,
    );
    l.ys.forEach((v, i) => {
      if (v !== null)
        out.push(
          `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${l.color}"><title>${esc(l.label)} at ${clients[i]} clients: ${fmt(v)}</title></circle>`,
        );
    });
  }
  return out.join('\n');
}

/**
 * The chart as an SVG document.
 * @example await writeFile('bench/results/latest.svg', renderChart(series, 'lastunit bench, 2026-01-01'))
 */
export function renderChart(series: ChartSeries[], subtitle: string): string {
  const clients = [...new Set(series.flatMap((s) => s.points.map((p) => p.clients)))].sort((a, b) => a - b);
  const at = (s: ChartSeries, f: (p: ChartPoint) => number) =>
    clients.map((c) => {
      const p = s.points.find((q) => q.clients === c);
      return p ? f(p) : null;
    });
  const left = panel(
    PAD.l,
    'claims per second (hot SKU)',
    'claims/s',
    clients,
    series.map((s) => ({ color: s.color, label: s.name, ys: at(s, (p) => p.claimsPerS) })),
  );
  const right = panel(PAD.l + PANEL_W / 2 + 40, 'response time, p50 (solid) and p99 (dashed)', 'ms', clients, [
    ...series.map((s) => ({ color: s.color, label: `${s.name} p50`, ys: at(s, (p) => p.p50Ms) })),
    ...series.map((s) => ({ color: s.color, dash: '5,4', label: `${s.name} p99`, ys: at(s, (p) => p.p99Ms) })),
  ]);
  const legend = series
    .map(
      (s, i) =>
        `<g transform="translate(${PAD.l + i * 260},${H - 12})"><rect width="14" height="4" y="-6" fill="${s.color}"/><text x="20" font-size="12">${esc(s.name)}</text></g>`,
    )
    .join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="13">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="14" text-anchor="middle" font-size="11" fill="#555">${esc(subtitle)}</text>`,
    left,
    right,
    legend,
    '</svg>',
    '',
  ].join('\n');
}
