// API keys: the account's keys (never the keys themselves, only their ids), the form that makes one, the page
// that shows a new key once, and the confirmation before a revocation.
import type { Operator } from '../../domain/accounts';
import { ROLES } from '../../domain/roles';
import type { ApiKeyView } from '../../accounts/accounts';
import { html } from '../html';
import { PATHS } from '../paths';
import { dateTime } from './account';
import { copyable } from './copyable';
import { csrfField, page, problem } from './layout';

const ROLE_TEXT: Record<string, string> = {
  full: 'full: every person operation',
  enrol: 'enrol: create, update, remove and get persons',
  match: 'match: get, identify, verify and compare',
};

export interface KeysView {
  operator: Operator;
  csrf: string;
  keys: ApiKeyView[];
  notice?: string;
  problem?: string;
  /** The form's values after a refusal (never a key). */
  form?: { label: string; role: string; signing: string; publicKey: string };
}

function keyRow(k: ApiKeyView) {
  return html`<tr${k.revoked ? html` class="revoked"` : ''}>
  <td data-label="Label">${k.label || '(no label)'}</td>
  <td data-label="Key id"><code>${k.keyId}</code></td>
  <td data-label="Role">${k.role}</td>
  <td data-label="Created">${dateTime(k.created)}</td>
  <td data-label="Last used">${k.lastUsed ? dateTime(k.lastUsed) : 'never'}</td>
  <td data-label="Signing">${k.signing ? 'yes' : 'no'}</td>
  <td data-label="Status">${k.revoked ? `revoked ${dateTime(k.revoked)}` : 'active'}</td>
  <td>${k.revoked ? '' : html`<a href="${PATHS.revokeKey(k.keyId)}">Revoke<span class="visually-hidden"> key ${k.keyId}</span></a>`}</td>
</tr>`;
}

export function keysPage(view: KeysView) {
  const form = view.form ?? { label: '', role: 'full', signing: 'none', publicKey: '' };
  const checked = (value: string) => (form.signing === value ? html` checked` : '');
  return page({ title: 'API keys', operator: view.operator, csrf: view.csrf, current: 'keys', notice: view.notice }, html`
<p>Clients send a key in the <code>Api-Key</code> header. A key is shown once, when it is made; here only its id.</p>
<div class="table-scroll" role="region" aria-labelledby="keys-caption" tabindex="0">
<table class="stacked">
  <caption id="keys-caption">Keys of this account</caption>
  <thead><tr><th scope="col">Label</th><th scope="col">Key id</th><th scope="col">Role</th><th scope="col">Created</th>
    <th scope="col">Last used</th><th scope="col">Signing</th><th scope="col">Status</th><th scope="col">Action</th></tr></thead>
  <tbody>${view.keys.length ? view.keys.map(keyRow) : html`<tr><td colspan="8">No keys yet.</td></tr>`}</tbody>
</table>
</div>
<h2 id="create-key">Create a key</h2>
${problem(view.problem)}
<form method="post" action="${PATHS.keys}" class="stack" aria-labelledby="create-key">
  ${csrfField(view.csrf)}
  <label for="key-label">Label</label>
  <input id="key-label" name="label" type="text" maxlength="100" value="${form.label}" aria-describedby="key-label-hint">
  <p id="key-label-hint" class="hint">Optional: which client uses the key.</p>
  <label for="key-role">Role</label>
  <select id="key-role" name="role">${ROLES.map((r) => html`
    <option value="${r}"${form.role === r ? html` selected` : ''}>${ROLE_TEXT[r] ?? r}</option>`)}
  </select>
  <fieldset>
    <legend>Request signing (enterprise clients)</legend>
    <div class="choice"><input id="signing-none" name="signing" type="radio" value="none"${checked('none')}>
      <label for="signing-none">No signing: the key alone authenticates</label></div>
    <div class="choice"><input id="signing-generate" name="signing" type="radio" value="generate"${checked('generate')}>
      <label for="signing-generate">Make a signing key pair: the private key is offered once as a download</label></div>
    <div class="choice"><input id="signing-upload" name="signing" type="radio" value="upload"${checked('upload')}>
      <label for="signing-upload">Use my own public key (pasted below)</label></div>
    <label for="public-key">RSA public key (PEM), for "use my own public key"</label>
    <textarea id="public-key" name="publicKey" rows="6" spellcheck="false">${form.publicKey}</textarea>
  </fieldset>
  <button type="submit">Create the key</button>
</form>`);
}

export interface NewKeyView {
  operator: Operator;
  csrf: string;
  /** The key in clear, when this is the one time it is shown. */
  shown?: { keyId: string; key: string; role: string; label: string; servicePublicKey?: string };
  /** A signing private key is waiting for its one download. */
  signingKeyPending: boolean;
  notice?: string;
}

export function newKeyPage(view: NewKeyView) {
  const s = view.shown;
  return page({ title: 'New API key', operator: view.operator, csrf: view.csrf, current: 'keys', notice: view.notice }, html`
${s ? html`
<p class="warning"><strong>Copy the key now: it is shown only this once.</strong> The service keeps only its hash.</p>
<dl class="facts">
  <dt>Key id</dt><dd><code>${s.keyId}</code></dd>
  <dt>Role</dt><dd>${s.role}</dd>
  <dt>Label</dt><dd>${s.label || '(no label)'}</dd>
</dl>
${copyable('new-api-key', 'API key (send as the Api-Key header)', s.key)}
${s.servicePublicKey ? html`<h2>Response signatures</h2>
<p>Responses to this key are signed with the service key below; verify them with it.</p>
${copyable('service-public-key', 'Service public key (PEM)', s.servicePublicKey)}` : ''}` : html`
<p>No new key to show: a key is shown only once, on the page that follows its creation. If it was not copied,
revoke it and create another.</p>`}
${view.signingKeyPending ? html`
<h2>Signing key</h2>
<p class="warning"><strong>Download the private signing key now: it can be downloaded only once</strong> and the
service does not keep it.</p>
<p><a class="button" href="${PATHS.signingKeyDownload}" download>Download the private signing key (PEM)</a></p>` : ''}
<p><a href="${PATHS.keys}">Back to the API keys</a></p>`);
}

export function revokeKeyPage(view: { operator: Operator; csrf: string; key: ApiKeyView }) {
  const k = view.key;
  return page({ title: 'Revoke an API key', operator: view.operator, csrf: view.csrf, current: 'keys' }, html`
<p>Revoke the key <code>${k.keyId}</code> (${k.label || 'no label'}, role ${k.role})? Requests made with it are
refused from now on. This cannot be undone.</p>
<form method="post" action="${PATHS.revokeKey(k.keyId)}" class="inline">
  ${csrfField(view.csrf)}
  <button type="submit" class="danger">Revoke the key</button>
  <a href="${PATHS.keys}">Cancel</a>
</form>`);
}
