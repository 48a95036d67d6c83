// The plan's daily quota and the number of enrolled persons, as a short list (account and usage pages).
import type { AccountDetails } from '../../accounts/accounts';
import { html } from '../html';

export function quotaSummary(account: AccountDetails) {
  const q = account.quota;
  return html`<dl class="facts">
  <dt>Requests per day (plan quota)</dt><dd>${q.requestsPerDay === 0 ? 'unlimited' : q.requestsPerDay}</dd>
  <dt>Metered requests used today (UTC)</dt><dd>${q.usedToday}</dd>
  <dt>Left today</dt><dd>${q.leftToday === null ? 'unlimited' : q.leftToday}</dd>
  <dt>Enrolled persons</dt><dd>${account.persons}</dd>
</dl>`;
}
