// Usage: the plan's quota and what is left today, the number of enrolled persons, and requests per day of the
// last 30 days for each API key (counted by the service) and each licence (reported by its device).
import type { Operator } from '../../domain/accounts';
import type { AccountDetails } from '../../accounts/accounts';
import { html } from '../html';
import { usageChart, type UsageDay } from '../usage-chart';
import { page } from './layout';
import { quotaSummary } from './quota';

export interface UsageSeries {
  id: string;
  name: string;
  days: UsageDay[];
}

export interface UsagePageView {
  operator: Operator;
  csrf: string;
  account: AccountDetails;
  keys: UsageSeries[];
  licences: UsageSeries[];
}

export function usagePage(view: UsagePageView) {
  return page({ title: 'Usage', operator: view.operator, csrf: view.csrf, current: 'usage' }, html`
<h2>Today</h2>
${quotaSummary(view.account)}
<h2>Requests per API key</h2>
<p class="hint">Every authenticated person-API request, per key and UTC day, the last 30 days. Counts reach this
page within a few seconds.</p>
${view.keys.length ? view.keys.map((k) => usageChart({ id: `key-${k.id}`, title: `Key ${k.name}: requests per day`, days: k.days }))
    : html`<p>No API keys.</p>`}
<h2>Requests per licence</h2>
<p class="hint">What each licensed device reported at its checks, per UTC day, the last 30 days.</p>
${view.licences.length ? view.licences.map((l) => usageChart({ id: `licence-${l.id}`, title: `Licence ${l.name}: requests per day`, days: l.days }))
    : html`<p>No licences.</p>`}`);
}
