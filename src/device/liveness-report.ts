// The self-contained HTML report of `face-check liveness-eval --html`: inline CSS, an inline SVG chart of
// APCER per attack kind and BPCER (with their 95 % upper bounds), the per-kind table, decision times and the
// wrongly decided sessions. No script, no external resource (its Content-Security-Policy forbids them), and
// no image: labels, counts and times only, never a frame of a recording.
import type { EvalResult } from './liveness-eval';
import type { KindSummary, Rate } from './pad-metrics';

const esc = (s: string | number): string => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? 'n/a' : `${(100 * v).toFixed(2)} %`);
const ms = (v: number | null): string => (v === null ? '–' : `${Math.round(v)} ms`);
/** The three most frequent refusal reasons; "window" (too few passing frames yet) only follows the others. */
const mainReasons = (reasons: Record<string, number>): string =>
  Object.entries(reasons).filter(([r]) => r !== 'window').sort((a, b) => b[1] - a[1]).slice(0, 3).map(([r]) => r).join(', ') || '–';


/** The chart's full scale: the smallest of these that holds every rate and upper bound. */
function axisMax(values: number[]): number {
  const top = Math.max(0, ...values);
  return [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1].find((m) => top <= m) ?? 1;
}

function chart(kinds: KindSummary[]): string {
  const rows = [...kinds.filter((k) => !k.bonaFide), ...kinds.filter((k) => k.bonaFide)];
  const max = axisMax(rows.flatMap((k) => [k.errorRate.rate ?? 0, k.errorRate.upper95 ?? 0]));
  const left = 150;
  const width = 420;
  const rowH = 28;
  const top = 24;
  const height = top + rows.length * rowH + 30;
  const x = (v: number) => left + (v / max) * width;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * max);
  const parts: string[] = [];
  for (const t of ticks) {
    parts.push(`<line x1="${x(t).toFixed(1)}" y1="${top - 6}" x2="${x(t).toFixed(1)}" y2="${top + rows.length * rowH}" class="grid"/>`);
    parts.push(`<text x="${x(t).toFixed(1)}" y="${top + rows.length * rowH + 18}" class="tick">${esc(`${+(100 * t).toFixed(2)} %`)}</text>`);
  }
  rows.forEach((k, i) => {
    const y = top + i * rowH;
    const r: Rate = k.errorRate;
    const name = k.bonaFide ? `BPCER (${k.label})` : `APCER ${k.label}`;
    parts.push(`<text x="${left - 8}" y="${y + 17}" class="name">${esc(name)}</text>`);
    if (r.rate !== null) {
      parts.push(`<rect x="${left}" y="${y + 5}" width="${Math.max(0, x(r.rate) - left).toFixed(1)}" height="16" class="${k.bonaFide ? 'bar bona' : 'bar attack'}" data-kind="${esc(k.label)}" data-rate="${r.rate}"/>`);
      parts.push(`<line x1="${x(r.rate).toFixed(1)}" y1="${y + 13}" x2="${x(r.upper95!).toFixed(1)}" y2="${y + 13}" class="upper"/>`);
      parts.push(`<text x="${(x(r.upper95!) + 6).toFixed(1)}" y="${y + 17}" class="value">${esc(`${pct(r.rate)} (${r.errors}/${r.presentations})`)}</text>`);
    }
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="chart-title" viewBox="0 0 ${left + width + 170} ${height}" width="100%">` +
    `<title id="chart-title">APCER per attack kind and BPCER, with the upper bound of the 95 % confidence interval</title>${parts.join('')}</svg>`;
}

const STYLE = `
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;padding:1.5rem;max-width:1100px;color:#1d2330;background:#fff}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.15rem;margin:1.75rem 0 .5rem}
.meta{color:#5a6272;margin:0 0 1rem;overflow-wrap:anywhere}
.cards{display:flex;flex-wrap:wrap;gap:.75rem}
.card{border:1px solid #d7dbe3;border-radius:8px;padding:.6rem .9rem;min-width:10rem}
.card b{display:block;font-size:1.35rem}
.table-scroll,.chart-scroll{overflow-x:auto}
figure{margin:0}.chart-scroll svg{display:block;min-width:600px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e3e6ec;padding:.35rem .5rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
svg .grid{stroke:#e3e6ec}svg .tick{font-size:11px;fill:#5a6272;text-anchor:middle}
svg .name{font-size:13px;fill:#1d2330;text-anchor:end}svg .value{font-size:12px;fill:#1d2330}
svg .bar.attack{fill:#c0392b}svg .bar.bona{fill:#2c6fbb}svg .upper{stroke:#1d2330;stroke-width:2}
.ok{color:#1e7b3c}.bad{color:#b0281a}
`;

function kindRows(kinds: KindSummary[]): string {
  return kinds.map((k) => `<tr data-kind="${esc(k.label)}"><td>${esc(k.label)}${k.bonaFide ? ' (bona fide)' : ''}</td>` +
    `<td>${k.presentations}</td><td>${k.accepted}</td><td>${k.noFace}</td>` +
    `<td>${k.bonaFide ? 'BPCER' : 'APCER'} ${pct(k.errorRate.rate)}</td><td>${pct(k.errorRate.upper95)}</td>` +
    `<td>${ms(k.decisionMs.p50)}</td><td>${ms(k.decisionMs.p95)}</td><td>${ms(k.decisionMs.max)}</td></tr>`).join('\n');
}

export function livenessReportHtml(result: EvalResult, generatedAt = new Date()): string {
  const m = result.metrics;
  const worst = m.worstCaseApcer;
  const wrong = m.wronglyDecided.length
    ? `<div class="table-scroll"><table id="wrong"><thead><tr><th>session</th><th>label</th><th>subject</th><th>distance</th><th>error</th><th>decision</th><th>main refusal reasons</th></tr></thead><tbody>
${m.wronglyDecided.map((w) => `<tr><td>${esc(w.session)}</td><td>${esc(w.label)}</td><td>${esc(w.subject || '–')}</td><td>${w.distanceCm === null ? '–' : `${esc(w.distanceCm)} cm`}</td>` +
    `<td class="bad">${esc(w.error)}</td><td>${ms(w.decisionMs)}</td><td>${esc(mainReasons(w.reasons))}</td></tr>`).join('\n')}
</tbody></table></div>`
    : '<p id="wrong" class="ok">Every session was decided as labelled.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Liveness evaluation (ISO/IEC 30107-3)</title><style>${STYLE}</style></head>
<body>
<h1>Liveness evaluation</h1>
<p class="meta">ISO/IEC 30107-3 metrics of <code>face-check liveness-eval</code> over ${m.presentations} recorded presentations in ${esc(result.folder)}; generated ${esc(generatedAt.toISOString())}. A presentation is accepted when the device pipeline stored a live capture from any of its frames.</p>
<div class="cards">
<div class="card" id="worst-apcer">worst-case APCER<b>${worst ? pct(worst.rate) : 'n/a'}</b>${worst ? `${esc(worst.label)}, 95 % upper ${pct(worst.upper95)}` : 'no attack presentations'}</div>
<div class="card" id="bpcer">BPCER<b>${pct(m.bpcer.rate)}</b>${m.bpcer.errors} of ${m.bpcer.presentations} bona fide rejected, 95 % upper ${pct(m.bpcer.upper95)}</div>
<div class="card" id="decision-time">decision time (bona fide)<b>${ms(m.decisionMs.p50)}</b>p50; p95 ${ms(m.decisionMs.p95)}, max ${ms(m.decisionMs.max)}</div>
</div>
<h2>Error rates</h2>
<figure id="chart"><div class="chart-scroll">${chart(m.kinds)}</div><figcaption class="meta">Bars: APCER per attack kind and BPCER; line: to the upper bound of the one-sided 95 % confidence interval.</figcaption></figure>
<h2>Per kind</h2>
<div class="table-scroll"><table id="kinds"><thead><tr><th>label</th><th>presentations</th><th>accepted</th><th>no face seen</th><th>error rate</th><th>95 % upper</th><th>decision p50</th><th>p95</th><th>max</th></tr></thead>
<tbody>
${kindRows(m.kinds)}
</tbody></table></div>
<h2>Wrongly decided sessions (${m.wronglyDecided.length})</h2>
${wrong}
<h2>Thresholds</h2>
<p class="meta">[liveness] of the ini the sessions were replayed with: ${esc(Object.entries(result.liveness).map(([k, v]) => `${k} = ${v}`).join('; '))}.</p>
</body></html>
`;
}
