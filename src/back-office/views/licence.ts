// One licence: its facts, the grants (one checkbox per grant), the installation command, usage per day,
// releasing the device binding and revoking it.
import type { Operator } from '../../domain/accounts';
import { GRANTS, GRANT_REQUESTS } from '../../domain/grants';
import type { DeviceKeyView } from '../../licensing/cloud/licence-device-keys';
import type { LicenceUsageView, LicenceView } from '../../licensing/cloud/licences';
import { html } from '../html';
import { PATHS } from '../paths';
import { usageChart } from '../usage-chart';
import { dateTime } from './account';
import { installation } from './copyable';
import { csrfField, page, problem } from './layout';
import { deviceKeysSection, type DeviceKeyForm } from './licence-keys';
import { deviceText, grantsText } from './licences';

export interface LicenceDetailView {
  operator: Operator;
  csrf: string;
  licence: LicenceView;
  usage: LicenceUsageView;
  notice?: string;
  problem?: string;
  /** The device API keys of the licence line. */
  deviceKeys: DeviceKeyView[];
  /** A refusal of the device key form, and its values. */
  deviceKeyProblem?: string;
  deviceKeyForm?: DeviceKeyForm;
  /** The cameras the command can set up, the operator's pick and why it was refused. */
  installChoices?: string[];
  install?: InstallForm;
  installProblem?: string;
}

/** The installation form's fields as given. */
export interface InstallForm {
  camera: string;
  port: string;
}

/** Picks the camera and port the command below sets up; a GET form, so the page (and its command) can be linked. */
function installForm(view: LicenceDetailView) {
  const l = view.licence;
  const chosen = view.install?.camera ?? '';
  return html`<form method="get" action="${PATHS.licence(l.licenceId)}" class="inline" aria-label="Camera and port of the installed device">
  <label for="install-camera">Camera</label>
  <select id="install-camera" name="camera">
    <option value=""${chosen === '' ? ' selected' : ''}>default (freenect)</option>
    ${(view.installChoices ?? []).map((c) => html`<option value="${c}"${c === chosen ? ' selected' : ''}>${c}</option>`)}
  </select>
  <label for="install-port">Port</label>
  <input id="install-port" name="port" inputmode="numeric" size="6" placeholder="8080" value="${view.install?.port ?? ''}">
  <button type="submit">Show the command</button>
</form>
${problem(view.installProblem)}`;
}

function settingsForm(view: LicenceDetailView) {
  const l = view.licence;
  return html`<h2 id="settings">Grants and settings</h2>
${problem(view.problem)}
<form method="post" action="${PATHS.licenceGrants(l.licenceId)}" class="stack" aria-labelledby="settings">
  ${csrfField(view.csrf)}
  <label for="licence-label">Label</label>
  <input id="licence-label" name="label" type="text" maxlength="100" value="${l.label}">
  <fieldset>
    <legend>Grants: the requests the device may answer</legend>
    ${GRANTS.map((g) => html`<div class="choice"><input id="grant-${g}" name="grant" type="checkbox" value="${g}"${l.grants.includes(g) ? html` checked` : ''}>
      <label for="grant-${g}">${g}: ${GRANT_REQUESTS[g].operation} (<code>${GRANT_REQUESTS[g].method} ${GRANT_REQUESTS[g].url}</code>)</label></div>
    `)}
  </fieldset>
  <label for="max-persons">Most enrolled persons on the device</label>
  <input id="max-persons" name="maxPersons" type="number" min="0" step="1" inputmode="numeric"
    value="${l.limits.maxPersons ?? ''}" aria-describedby="max-persons-hint">
  <p id="max-persons-hint" class="hint">Empty: no limit.</p>
  <button type="submit">Save grants and settings</button>
</form>`;
}

export function licencePage(view: LicenceDetailView) {
  const l = view.licence;
  const active = l.status === 'active';
  const usedToday = Object.entries(l.usageToday).map(([op, n]) => `${op} ${n}`).join(', ') || 'none';
  return page({ title: `Licence ${l.label || l.licenceId}`, operator: view.operator, csrf: view.csrf, current: 'licences', notice: view.notice }, html`
<p><a href="${PATHS.licences}">All licences</a></p>
<dl class="facts">
  <dt>Licence id</dt><dd><code>${l.licenceId}</code></dd>
  <dt>Status</dt><dd>${l.status}</dd>
  <dt>Grants</dt><dd>${grantsText(l.grants)}</dd>
  <dt>Most persons</dt><dd>${l.limits.maxPersons ?? 'no limit'}</dd>
  <dt>Expires</dt><dd>${l.expires ? dateTime(l.expires) : 'never'}</dd>
  <dt>Device</dt><dd>${deviceText(l)}</dd>
  <dt>Last check</dt><dd>${l.lastCheck
    ? `${dateTime(l.lastCheck.at)} from ${l.lastCheck.address}, version ${l.lastCheck.version}, ${l.lastCheck.persons} ${l.lastCheck.persons === 1 ? 'person' : 'persons'}`
    : 'never'}</dd>
  <dt>Requests today</dt><dd>${usedToday}</dd>
  <dt>Created</dt><dd>${dateTime(l.created)}</dd>
</dl>
${active ? html`
<h2>Installation</h2>
${l.installCommand !== null ? installForm(view) : ''}
${installation(`install-${l.licenceId}`, 'Installation command (run as root on the device)', l.installCommand, l.installUnavailable)}
${settingsForm(view)}` : html`<p>This licence is revoked: its device is refused at its next check. Revoking is final.</p>`}
${deviceKeysSection({ licenceId: l.licenceId, active, keys: view.deviceKeys, csrf: view.csrf, problem: view.deviceKeyProblem, form: view.deviceKeyForm })}
<h2>Usage</h2>
${usageChart({ id: `licence-${l.licenceId}`, title: `Requests per day answered by the device of ${l.label || l.licenceId}`,
    days: view.usage.days.map((d) => ({ day: d.day, requests: d.total })) })}
${active ? html`
<h2>Device binding</h2>
${l.device ? html`<p>Release the binding when the device is replaced: the next device that checks in with the key binds.</p>
<form method="post" action="${PATHS.releaseLicence(l.licenceId)}" class="inline">
  ${csrfField(view.csrf)}
  <button type="submit">Release the device binding</button>
</form>` : html`<p>No device is bound: the first device to check in with the key binds.</p>`}
<h2>Revoke</h2>
<p><a class="button danger" href="${PATHS.revokeLicence(l.licenceId)}">Revoke this licence…</a></p>` : ''}`);
}

export function revokeLicencePage(view: { operator: Operator; csrf: string; licence: LicenceView }) {
  const l = view.licence;
  return page({ title: 'Revoke a licence', operator: view.operator, csrf: view.csrf, current: 'licences' }, html`
<p>Revoke the licence <code>${l.licenceId}</code> (${l.label || 'no label'})? Its device is refused at its next
check. This cannot be undone.</p>
<form method="post" action="${PATHS.revokeLicence(l.licenceId)}" class="inline">
  ${csrfField(view.csrf)}
  <button type="submit" class="danger">Revoke the licence</button>
  <a href="${PATHS.licence(l.licenceId)}">Cancel</a>
</form>`);
}
