// The account overview: who is signed in, the plan and what is left of today's quota, and the way to the
// sections. No person is listed: the back-office never shows biometric data, only how many persons exist.
import type { AccountDetails } from '../../accounts/accounts';
import type { Operator } from '../../domain/accounts';
import { html } from '../html';
import { PATHS } from '../paths';
import { page } from './layout';
import { quotaSummary } from './quota';

export function accountPage(view: { operator: Operator; csrf: string; account: AccountDetails; notice?: string }) {
  const a = view.account;
  return page({ title: 'Account', operator: view.operator, csrf: view.csrf, current: 'account', notice: view.notice }, html`
<dl class="facts">
  <dt>E-mail address</dt><dd>${a.email}</dd>
  <dt>Account id</dt><dd><code>${a.accountId}</code></dd>
  <dt>Plan</dt><dd>${a.plan === 'free' ? 'free test plan' : a.plan}</dd>
  <dt>Role</dt><dd>${a.role}</dd>
  <dt>Created</dt><dd>${dateTime(a.created)}</dd>
</dl>
<h2>Today</h2>
${quotaSummary(a)}
<h2>Sections</h2>
<ul>
  <li><a href="${PATHS.keys}">API keys</a>: create, list and revoke the keys your clients send as Api-Key.</li>
  <li><a href="${PATHS.licences}">Licences</a>: add a licence for a device, set its grants, copy its installation command.</li>
  <li><a href="${PATHS.usage}">Usage</a>: requests per day of the last 30 days, per key and per licence.</li>
</ul>`);
}

/** An ISO 8601 timestamp as "YYYY-MM-DD HH:MM UTC" (the store's times are UTC). */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}
