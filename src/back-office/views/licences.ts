// The licence section (spec 1, licence set-up): the account's licences, each on its line with status,
// grants, bound device, last check and the installation command to copy; and the form that adds one.
import type { Operator } from '../../domain/accounts';
import type { LicenceView } from '../../licensing/cloud/licences';
import { html } from '../html';
import { PATHS } from '../paths';
import { dateTime } from './account';
import { installation } from './copyable';
import { csrfField, page, problem } from './layout';

export interface LicencesView {
  operator: Operator;
  csrf: string;
  licences: LicenceView[];
  /** The account's plan asks for an activation code to add a licence. */
  codeRequired: boolean;
  notice?: string;
  problem?: string;
  form?: { label: string; activationCode: string };
}

export function grantsText(grants: readonly string[]): string {
  return grants.length ? grants.join(', ') : 'none (the device answers no request)';
}

export function deviceText(licence: LicenceView): string {
  return licence.device ? `${licence.device.fingerprint.slice(0, 16)}… (bound ${dateTime(licence.device.boundAt)})` : 'not bound yet';
}

function licenceLine(l: LicenceView) {
  const name = l.label || l.licenceId;
  return html`<article class="licence-line${l.status === 'revoked' ? ' revoked' : ''}" aria-labelledby="line-${l.licenceId}">
  <h3 id="line-${l.licenceId}"><a href="${PATHS.licence(l.licenceId)}">${name}</a> <span class="status">${l.status}</span></h3>
  <dl class="facts">
    <dt>Licence id</dt><dd><code>${l.licenceId}</code></dd>
    <dt>Grants</dt><dd>${grantsText(l.grants)}</dd>
    <dt>Device</dt><dd>${deviceText(l)}</dd>
    <dt>Last check</dt><dd>${l.lastCheck ? dateTime(l.lastCheck.at) : 'never'}</dd>
  </dl>
  ${l.status === 'active' ? installation(`install-${l.licenceId}`, `Installation command for ${name} (run as root on the device)`, l.installCommand, l.installUnavailable) : ''}
</article>`;
}

export function licencesPage(view: LicencesView) {
  const form = view.form ?? { label: '', activationCode: '' };
  return page({ title: 'Licences', operator: view.operator, csrf: view.csrf, current: 'licences', notice: view.notice }, html`
<p>A licence lets one device serve the person API. Add one, set its grants, then run its installation command
on the device.</p>
<h2>Licences of this account</h2>
${view.licences.length ? view.licences.map(licenceLine) : html`<p>No licences yet.</p>`}
<h2 id="add-licence">Add a licence</h2>
${problem(view.problem)}
<form method="post" action="${PATHS.licences}" class="stack" aria-labelledby="add-licence">
  ${csrfField(view.csrf)}
  <label for="licence-label">Label</label>
  <input id="licence-label" name="label" type="text" maxlength="100" value="${form.label}" aria-describedby="licence-label-hint">
  <p id="licence-label-hint" class="hint">Optional: where the device stands, e.g. "Gate 3".</p>
  ${view.codeRequired ? html`
  <label for="activation-code">Activation code</label>
  <input id="activation-code" name="activationCode" type="text" required autocomplete="off" spellcheck="false"
    value="${form.activationCode}" aria-describedby="activation-code-hint">
  <p id="activation-code-hint" class="hint">Your plan needs one to add a licence: XXXX-XXXX-XXXX-XXXX, from your provider.</p>` : ''}
  <p class="hint">The new licence allows no request until you set its grants on the next page.</p>
  <button type="submit">Add the licence</button>
</form>`);
}
