// Administration (administrator accounts only, made by `face-check account create --admin`): every account
// at a glance, and activation codes: issue one (shown once) and see which were used.
import { PLANS, type Operator } from '../../domain/accounts';
import type { AccountView } from '../../accounts/accounts';
import type { ActivationCodeRecord } from '../../storage/records';
import { html } from '../html';
import { PATHS } from '../paths';
import { dateTime } from './account';
import { copyable } from './copyable';
import { csrfField, page, problem } from './layout';

export interface AdminAccountRow extends AccountView {
  keys: number;
  licences: number;
  persons: number;
}

export interface AdminView {
  operator: Operator;
  csrf: string;
  accounts: AdminAccountRow[];
  codes: ActivationCodeRecord[];
  /** A code just issued: the one time it is shown. */
  issued?: { code: string; plan: string; expires: string };
  defaultValidDays: number;
  problem?: string;
  notice?: string;
}

export function adminPage(view: AdminView) {
  return page({ title: 'Administration', operator: view.operator, csrf: view.csrf, current: 'admin', notice: view.notice }, html`
<h2>Accounts</h2>
<div class="table-scroll" role="region" aria-labelledby="accounts-caption" tabindex="0">
<table class="stacked">
  <caption id="accounts-caption">Every account of this service</caption>
  <thead><tr><th scope="col">E-mail address</th><th scope="col">Account id</th><th scope="col">Plan</th><th scope="col">Role</th>
    <th scope="col">Created</th><th scope="col">API keys</th><th scope="col">Licences</th><th scope="col">Persons</th></tr></thead>
  <tbody>${view.accounts.map((a) => html`<tr><td data-label="E-mail">${a.email}</td><td data-label="Account id"><code>${a.accountId}</code></td><td data-label="Plan">${a.plan}</td><td data-label="Role">${a.role}</td>
    <td data-label="Created">${dateTime(a.created)}</td><td data-label="API keys">${a.keys}</td><td data-label="Licences">${a.licences}</td><td data-label="Persons">${a.persons}</td></tr>`)}</tbody>
</table>
</div>
<h2 id="issue-code">Issue an activation code</h2>
${view.issued ? html`<p class="warning"><strong>Copy the code now: it is shown only this once.</strong> It is for the
${view.issued.plan} plan and expires ${dateTime(view.issued.expires)}.</p>
${copyable('issued-code', 'Activation code', view.issued.code)}` : ''}
${problem(view.problem)}
<form method="post" action="${PATHS.adminCodes}" class="stack" aria-labelledby="issue-code">
  ${csrfField(view.csrf)}
  <label for="code-plan">Plan of the accounts that may use it</label>
  <select id="code-plan" name="plan">${PLANS.map((p) => html`<option value="${p}">${p}</option>`)}</select>
  <label for="code-purpose">What the code opens</label>
  <select id="code-purpose" name="purpose"><option value="licence">a licence (added by an account)</option>
    <option value="registration">an account (registration)</option></select>
  <label for="code-email">Invited e-mail address (registration only; empty = anyone with the code)</label>
  <input id="code-email" name="email" type="email" autocomplete="off">
  <label for="code-days">Valid for (days)</label>
  <input id="code-days" name="validDays" type="number" min="1" max="3650" step="1" required value="${view.defaultValidDays}">
  <button type="submit">Issue a code</button>
</form>
<h2>Activation codes</h2>
<div class="table-scroll" role="region" aria-labelledby="codes-caption" tabindex="0">
<table class="stacked">
  <caption id="codes-caption">Codes issued (only their ids: the codes themselves are not kept)</caption>
  <thead><tr><th scope="col">Code id</th><th scope="col">Opens</th><th scope="col">Plan</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Used</th></tr></thead>
  <tbody>${view.codes.length ? view.codes.map((c) => html`<tr><td data-label="Code id"><code>${c.codeId}</code></td><td data-label="Opens">${codeUse(c)}</td><td data-label="Plan">${c.plan}</td><td data-label="Created">${dateTime(c.created)}</td>
    <td data-label="Expires">${dateTime(c.expires)}</td><td data-label="Used">${c.used ? `${dateTime(c.used.at)} by ${c.used.accountId}${c.used.licenceId ? ` (${c.used.licenceId})` : ''}` : 'no'}</td></tr>`)
    : html`<tr><td colspan="6">No codes yet.</td></tr>`}</tbody>
</table>
</div>`);
}

/** What a code opens: a licence, an account, or one invited address's account. */
function codeUse(code: ActivationCodeRecord): string {
  if (code.purpose !== 'registration') return 'licence';
  return code.email ? `account for ${code.email}` : 'account';
}
