// A licence line's device API keys: the keys its device accepts (never the keys, only their ids), the form
// that makes one, the page that shows a new key once, and the confirmation before a revocation.
import type { Operator } from '../../domain/accounts';
import { ROLES } from '../../domain/roles';
import type { DeviceKeyView } from '../../licensing/cloud/licence-device-keys';
import { html } from '../html';
import { PATHS } from '../paths';
import { dateTime } from './account';
import { copyable } from './copyable';
import { csrfField, page, problem } from './layout';

const ROLE_TEXT: Record<string, string> = {
  full: 'full: every person operation and the live face',
  enrol: 'enrol: create, update, remove and get persons',
  match: 'match: get, identify, verify, compare and the live face',
};

/** The form's values after a refusal (never a key). */
export interface DeviceKeyForm {
  label: string;
  role: string;
  signing: string;
  publicKey: string;
}

function keyRow(licenceId: string, k: DeviceKeyView) {
  return html`<tr${k.revoked ? html` class="revoked"` : ''}>
  <td data-label="Label">${k.label || '(no label)'}</td>
  <td data-label="Key id"><code>${k.keyId}</code></td>
  <td data-label="Role">${k.role}</td>
  <td data-label="Created">${dateTime(k.created)}</td>
  <td data-label="Signing">${k.signing ? 'yes' : 'no'}</td>
  <td data-label="Status">${k.revoked ? `revoked ${dateTime(k.revoked)}` : 'active'}</td>
  <td>${k.revoked ? '' : html`<a href="${PATHS.revokeDeviceKey(licenceId, k.keyId)}">Revoke<span class="visually-hidden"> device key ${k.keyId}</span></a>`}</td>
</tr>`;
}

/** The licence page's section: the keys and, on an active licence, the form that makes one. */
export function deviceKeysSection(view: { licenceId: string; active: boolean; keys: DeviceKeyView[]; csrf: string; problem?: string; form?: DeviceKeyForm }) {
  const form = view.form ?? { label: '', role: 'match', signing: 'none', publicKey: '' };
  const checked = (value: string) => (form.signing === value ? html` checked` : '');
  return html`<h2 id="device-keys">Device API keys</h2>
<p>Clients on the device send one of these keys in the <code>Api-Key</code> header. The device learns a new key, and
that a key is revoked, at its next licence check. A key made on the device itself
(<code>face-check keys create</code>) works as well.</p>
<div class="table-scroll" role="region" aria-labelledby="device-keys-caption" tabindex="0">
<table class="stacked">
  <caption id="device-keys-caption">Keys the device accepts</caption>
  <thead><tr><th scope="col">Label</th><th scope="col">Key id</th><th scope="col">Role</th><th scope="col">Created</th>
    <th scope="col">Signing</th><th scope="col">Status</th><th scope="col">Action</th></tr></thead>
  <tbody>${view.keys.length ? view.keys.map((k) => keyRow(view.licenceId, k)) : html`<tr><td colspan="7">No device keys yet.</td></tr>`}</tbody>
</table>
</div>
${view.active ? html`<h3 id="create-device-key">Create a device key</h3>
${problem(view.problem)}
<form method="post" action="${PATHS.deviceKeys(view.licenceId)}" class="stack" aria-labelledby="create-device-key">
  ${csrfField(view.csrf)}
  <label for="device-key-label">Label</label>
  <input id="device-key-label" name="label" type="text" maxlength="100" value="${form.label}" aria-describedby="device-key-label-hint">
  <p id="device-key-label-hint" class="hint">Optional: which client on the device uses the key.</p>
  <label for="device-key-role">Role</label>
  <select id="device-key-role" name="role">${ROLES.map((r) => html`
    <option value="${r}"${form.role === r ? html` selected` : ''}>${ROLE_TEXT[r] ?? r}</option>`)}
  </select>
  <fieldset>
    <legend>Request signing (enterprise clients)</legend>
    <div class="choice"><input id="device-signing-none" name="signing" type="radio" value="none"${checked('none')}>
      <label for="device-signing-none">No signing: the key alone authenticates</label></div>
    <div class="choice"><input id="device-signing-generate" name="signing" type="radio" value="generate"${checked('generate')}>
      <label for="device-signing-generate">Make a signing key pair: the private key is offered once as a download</label></div>
    <div class="choice"><input id="device-signing-upload" name="signing" type="radio" value="upload"${checked('upload')}>
      <label for="device-signing-upload">Use my own public key (pasted below)</label></div>
    <label for="device-public-key">RSA public key (PEM), for "use my own public key"</label>
    <textarea id="device-public-key" name="publicKey" rows="6" spellcheck="false">${form.publicKey}</textarea>
  </fieldset>
  <button type="submit">Create the device key</button>
</form>` : ''}`;
}

export interface NewDeviceKeyView {
  operator: Operator;
  csrf: string;
  licenceId: string;
  shown?: { keyId: string; key: string; role: string; label: string };
  signingKeyPending: boolean;
}

export function newDeviceKeyPage(view: NewDeviceKeyView) {
  const s = view.shown;
  return page({ title: 'New device API key', operator: view.operator, csrf: view.csrf, current: 'licences' }, html`
${s ? html`
<p class="warning"><strong>Copy the key now: it is shown only this once.</strong> The cloud keeps only its hash, and the
device learns only that hash.</p>
<dl class="facts">
  <dt>Key id</dt><dd><code>${s.keyId}</code></dd>
  <dt>Licence</dt><dd><code>${view.licenceId}</code></dd>
  <dt>Role</dt><dd>${s.role}</dd>
  <dt>Label</dt><dd>${s.label || '(no label)'}</dd>
</dl>
${copyable('new-device-key', 'Device API key (send as the Api-Key header to the device)', s.key)}
<p>The device accepts the key from its next licence check.</p>` : html`
<p>No new key to show: a key is shown only once, on the page that follows its creation. If it was not copied,
revoke it and create another.</p>`}
${view.signingKeyPending ? html`
<h2>Signing key</h2>
<p class="warning"><strong>Download the private signing key now: it can be downloaded only once</strong> and the
service does not keep it. The device signs its responses with its own service key
(<code>face-check keys service-public-key</code> on the device).</p>
<p><a class="button" href="${PATHS.signingKeyDownload}" download>Download the private signing key (PEM)</a></p>` : ''}
<p><a href="${PATHS.licence(view.licenceId)}#device-keys">Back to the licence</a></p>`);
}

export function revokeDeviceKeyPage(view: { operator: Operator; csrf: string; licenceId: string; key: DeviceKeyView }) {
  const k = view.key;
  return page({ title: 'Revoke a device API key', operator: view.operator, csrf: view.csrf, current: 'licences' }, html`
<p>Revoke the device key <code>${k.keyId}</code> (${k.label || 'no label'}, role ${k.role}) of licence
<code>${view.licenceId}</code>? The device refuses it from its next licence check. This cannot be undone.</p>
<form method="post" action="${PATHS.revokeDeviceKey(view.licenceId, k.keyId)}" class="inline">
  ${csrfField(view.csrf)}
  <button type="submit" class="danger">Revoke the device key</button>
  <a href="${PATHS.licence(view.licenceId)}#device-keys">Cancel</a>
</form>`);
}
