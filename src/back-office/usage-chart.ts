// Requests per day as an inline SVG bar chart drawn here (no chart library, no CDN, nothing to run in the
// browser): one bar per day with a <title> (the hover text), and the same numbers in a table for screen
// readers and for anyone who wants the figures.
import { html } from './html';

export interface UsageDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  requests: number;
}

export interface UsageChartInput {
  /** Unique on the page; the chart's element ids derive from it. */
  id: string;
  title: string;
  days: readonly UsageDay[];
}

const BAR = 18;
const GAP = 4;
const PLOT_HEIGHT = 120;
const LEFT = 44;
const TOP = 12;
const BOTTOM = 24;

/** The chart's scale top: the largest day rounded up to 1, 2 or 5 times a power of ten (at least 1). */
export function scaleTop(max: number): number {
  if (max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

function requestsText(n: number): string {
  return `${n} request${n === 1 ? '' : 's'}`;
}

export function usageChart(input: UsageChartInput) {
  const id = input.id.replace(/[^A-Za-z0-9_-]/g, '-');
  const days = input.days;
  const total = days.reduce((sum, d) => sum + d.requests, 0);
  const top = scaleTop(Math.max(0, ...days.map((d) => d.requests)));
  const width = LEFT + days.length * (BAR + GAP) + GAP;
  const height = TOP + PLOT_HEIGHT + BOTTOM;
  const baseline = TOP + PLOT_HEIGHT;
  const first = days[0]?.day ?? '';
  const last = days[days.length - 1]?.day ?? '';
  const summary = days.length
    ? `${requestsText(total)} from ${first} to ${last}; the busiest day had ${requestsText(Math.max(...days.map((d) => d.requests)))}.`
    : 'No days to show.';
  return html`<figure class="chart" aria-labelledby="${id}-caption">
<figcaption id="${id}-caption">${input.title}</figcaption>
<div class="chart-scroll">
<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${id}-title ${id}-desc"
  xmlns="http://www.w3.org/2000/svg" class="bars">
  <title id="${id}-title">${input.title}</title>
  <desc id="${id}-desc">${summary}</desc>
  <line x1="${LEFT}" y1="${baseline}" x2="${width}" y2="${baseline}" class="axis"/>
  <line x1="${LEFT}" y1="${TOP}" x2="${width}" y2="${TOP}" class="grid"/>
  <text x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end" class="label">${top}</text>
  <text x="${LEFT - 6}" y="${baseline + 4}" text-anchor="end" class="label">0</text>
  ${days.map((d, i) => {
    const x = LEFT + GAP + i * (BAR + GAP);
    const h = Math.round((d.requests / top) * PLOT_HEIGHT * 10) / 10;
    return html`<g class="day"><title>${d.day}: ${requestsText(d.requests)}</title>
    <rect x="${x}" y="${TOP}" width="${BAR}" height="${PLOT_HEIGHT}" class="hit"/>
    <rect x="${x}" y="${baseline - h}" width="${BAR}" height="${h}" class="bar" data-day="${d.day}" data-requests="${d.requests}"/></g>`;
  })}
  <text x="${LEFT + GAP}" y="${height - 6}" class="label">${first}</text>
  <text x="${width - GAP}" y="${height - 6}" text-anchor="end" class="label">${last}</text>
</svg>
</div>
<details>
<summary>The numbers as a table</summary>
<div class="table-scroll" role="region" aria-labelledby="${id}-table-caption" tabindex="0">
<table>
  <caption id="${id}-table-caption">${input.title}</caption>
  <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Requests</th></tr></thead>
  <tbody>${days.map((d) => html`<tr><td>${d.day}</td><td>${d.requests}</td></tr>`)}</tbody>
  <tfoot><tr><th scope="row">Total</th><td>${total}</td></tr></tfoot>
</table>
</div>
</details>
</figure>`;
}

/** The last `count` UTC days up to and including `now`'s, oldest first. */
export function lastDays(now: Date, count: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const days: string[] = [];
  for (let i = count - 1; i >= 0; i--) days.push(new Date(today - i * 86_400_000).toISOString().slice(0, 10));
  return days;
}

/** Counts of some days spread over every day of `days` (missing days are 0). */
export function everyDay(days: readonly string[], counts: readonly UsageDay[]): UsageDay[] {
  const byDay = new Map(counts.map((c) => [c.day, c.requests]));
  return days.map((day) => ({ day, requests: byDay.get(day) ?? 0 }));
}
