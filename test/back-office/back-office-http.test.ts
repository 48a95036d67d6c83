// The back-office over HTTP without a browser (app.inject): served in cloud mode only, security headers in
// its scope only, cookies' attributes, CSRF on every form, the form body limit, escaping, one-time secrets,
// administrators only on the administration page, and the per-key request counts behind the usage charts.
import path from 'node:path';
import { open } from 'lmdb';
import t from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';
import { cameraSourceNames } from '../../src/device/camera-catalog';
import { writeTinyTarball } from '../helpers/tiny-package';
import { escapeHtml, html, trusted } from '../../src/back-office/html';
import { parseCookies } from '../../src/back-office/cookies';
import { CsrfTokens } from '../../src/back-office/csrf';
import { OneTimeReveals, REVEAL_TTL_MS } from '../../src/back-office/reveals';
import { lastDays, scaleTop, usageChart } from '../../src/back-office/usage-chart';
import { lmdbKeyUsage } from '../../src/storage/lmdb/key-usage';
import { openStore } from '../../src/storage/lmdb/store';

const PASSWORD = 'correct horse battery';

async function cloudApp(tune: (c: TestApp['config']) => void = () => undefined): Promise<TestApp> {
  const dir = tempDir();
  return startTestApp({
    dir,
    tune: (c) => {
      c.server.mode = 'cloud';
      // A tiny package: the licence lines' installation commands need its hash, not the whole program packed.
      c.licensing.package_file = writeTinyTarball(dir);
      tune(c);
    },
  });
}

/** A cookie-keeping client over app.inject, reading each form's CSRF token off the page like a browser. */
class Visitor {
  readonly cookies = new Map<string, string>();
  lastPage = '';

  constructor(private readonly app: TestApp) {}

  private remember(res: LightMyRequestResponse): void {
    const set = res.headers['set-cookie'];
    for (const line of [set ?? []].flat()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (/Expires=Thu, 01 Jan 1970/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    const res = await this.app.app.inject({ method: 'GET', url, headers: { cookie: this.cookieHeader() } });
    this.remember(res);
    if (String(res.headers['content-type']).startsWith('text/html')) this.lastPage = res.body;
    return res;
  }

  /** The CSRF token of the last page's forms. */
  csrf(): string {
    const m = /name="csrf" value="([^"]+)"/.exec(this.lastPage);
    if (!m) throw new Error('no CSRF field on the last page');
    return m[1];
  }

  /** Posts a form; `csrf: null` leaves the token out, a string sends that one instead of the page's. */
  async post(url: string, fields: Record<string, string | string[]>, csrf: string | null | undefined = undefined): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    const token = csrf === undefined ? this.csrf() : csrf;
    if (token !== null) body.append('csrf', token);
    for (const [k, v] of Object.entries(fields)) for (const one of [v].flat()) body.append(k, one);
    const res = await this.app.app.inject({
      method: 'POST', url, payload: body.toString(),
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
    });
    this.remember(res);
    if (String(res.headers['content-type']).startsWith('text/html')) this.lastPage = res.body;
    return res;
  }

  async register(email: string): Promise<string> {
    await this.get('/back-office/register');
    const res = await this.post('/back-office/register', { email, password: PASSWORD });
    if (res.statusCode !== 303) throw new Error(`register: ${res.statusCode} ${res.body}`);
    const page = await this.get(String(res.headers.location));
    const key = /<code>(fc_[A-Za-z0-9_-]+)<\/code>/.exec(page.body)?.[1];
    if (!key) throw new Error('no key on the page after registration');
    return key;
  }
}

t.test('device mode serves no back-office', async (t) => {
  const a = await startTestApp({ tune: (c) => { c.server.mode = 'device'; c.camera.source = 'none'; } });
  t.teardown(() => a.close());
  const res = await a.app.inject({ method: 'GET', url: '/back-office/sign-in' });
  t.equal(res.statusCode, 404);
  t.match(res.headers['content-type'], /^application\/json/, 'the API\'s own 404');
});

t.test('pages carry the security headers; the JSON API does not', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const page = await a.app.inject({ method: 'GET', url: '/back-office/sign-in' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /^text\/html; charset=utf-8/);
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /script-src 'self'/);
  t.notMatch(csp, /unsafe-inline/, 'no inline script or style allowed');
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, /form-action 'self'/);
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.equal(page.headers['cache-control'], 'no-store');
  t.notMatch(page.body, /<script>|<script [^>]*>[^<]/, 'no inline script in the page');
  t.notMatch(page.body, / style="/, 'no inline style attributes');
  const formCookie = String(page.headers['set-cookie']);
  t.match(formCookie, /^fc_form=[A-Za-z0-9_-]{43}; Path=\/back-office; HttpOnly; SameSite=Strict$/);

  const api = await a.call({ method: 'GET', url: '/person/face/x' });
  t.equal(api.headers['content-security-policy'], undefined, 'the JSON API is unchanged');
  t.equal(api.headers['set-cookie'], undefined);

  const doc = (await a.call({ method: 'GET', url: '/openapi.json', key: null })).json();
  t.ok(doc.paths['/account/v1/register'], 'the JSON API is documented');
  t.same(Object.keys(doc.paths).filter((p) => p.startsWith('/back-office')), [], 'the pages are not');

  const root = await a.app.inject({ method: 'GET', url: '/back-office' });
  t.equal(root.statusCode, 303);
  t.equal(root.headers.location, '/back-office/sign-in');
  const missing = await a.app.inject({ method: 'GET', url: '/back-office/no-such-page' });
  t.equal(missing.statusCode, 404);
  t.match(missing.headers['content-type'], /^text\/html/, 'an HTML not-found page inside the back-office');
});

t.test('the stylesheet and script are served with long caching under content-hashed addresses', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const page = await a.app.inject({ method: 'GET', url: '/back-office/sign-in' });
  const css = /href="(\/back-office\/static\/style\.[0-9a-f]{12}\.css)"/.exec(page.body)?.[1];
  const js = /src="(\/back-office\/static\/copy\.[0-9a-f]{12}\.js)"/.exec(page.body)?.[1];
  t.ok(css && js, 'the page links both');
  const cssRes = await a.app.inject({ method: 'GET', url: css! });
  t.equal(cssRes.statusCode, 200);
  t.match(cssRes.headers['content-type'], /^text\/css/);
  t.match(cssRes.headers['cache-control'], /max-age=31536000/);
  t.match(cssRes.body, /:focus-visible/);
  const jsRes = await a.app.inject({ method: 'GET', url: js! });
  t.match(jsRes.headers['content-type'], /^text\/javascript/);
  t.match(jsRes.body, /navigator\.clipboard/);
});

t.test('registration: CSRF checked, key shown once, session cookie attributes', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.get('/back-office/register');

  const without = await v.post('/back-office/register', { email: 'ann@example.com', password: PASSWORD }, null);
  t.equal(without.statusCode, 403, 'no token');
  t.match(without.body, /Nothing was changed/);
  const wrong = await v.post('/back-office/register', { email: 'ann@example.com', password: PASSWORD }, 'A'.repeat(43));
  t.equal(wrong.statusCode, 403, 'a wrong token');
  t.equal(a.store.accounts.list().length, 0, 'no account was made');

  await v.get('/back-office/register');
  const ok = await v.post('/back-office/register', { email: 'ann@example.com', password: PASSWORD });
  t.equal(ok.statusCode, 303);
  t.equal(ok.headers.location, '/back-office/keys/new?done=registered');
  const session = [ok.headers['set-cookie']].flat().find((c) => String(c).startsWith('fc_session='));
  t.match(session, /^fc_session=fcs_[A-Za-z0-9_-]{32}; Path=\/back-office; HttpOnly; SameSite=Strict; Expires=/);
  t.notMatch(session, /Secure/, 'plain http: not Secure');

  const shown = await v.get('/back-office/keys/new?done=registered');
  const key = /<code>(fc_[A-Za-z0-9_-]+)<\/code>/.exec(shown.body)?.[1];
  t.ok(key, 'the free plan key is on the page');
  t.equal((await a.call({ method: 'GET', url: '/person/face/x', key })).statusCode, 404, 'and it authenticates');
  const again = await v.get('/back-office/keys/new');
  t.notMatch(again.body, new RegExp(key!), 'a reload does not show it again');
  t.match(again.body, /shown only once/);
  const keys = await v.get('/back-office/keys');
  t.notMatch(keys.body, /fc_[A-Za-z0-9_-]{32}/, 'the list shows ids, never keys');
});

t.test('session cookies are Secure when the public address is https', async (t) => {
  const a = await cloudApp((c) => { c.licensing.public_url = 'https://faces.example.com'; });
  t.teardown(() => a.close());
  const page = await a.app.inject({ method: 'GET', url: '/back-office/sign-in' });
  t.match(String(page.headers['set-cookie']), /; Secure$/);
  const v = new Visitor(a);
  await v.get('/back-office/register');
  const ok = await v.post('/back-office/register', { email: 'sec@example.com', password: PASSWORD });
  t.match(String([ok.headers['set-cookie']].flat().find((c) => String(c).startsWith('fc_session='))), /; Secure/);
});

t.test('a signed-out or unknown session reaches nothing; a form without a session changes nothing', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.register('bob@example.com');
  const cookie = v.cookies.get('fc_session')!;
  await v.get('/back-office/account');
  const out = await v.post('/back-office/sign-out', {});
  t.equal(out.statusCode, 303);
  t.equal(out.headers.location, '/back-office/sign-in?done=signed-out');
  t.notOk(v.cookies.has('fc_session'), 'the cookie is cleared');

  const replay = await a.app.inject({ method: 'GET', url: '/back-office/keys', headers: { cookie: `fc_session=${cookie}` } });
  t.equal(replay.statusCode, 303, 'the old cookie no longer signs in');
  t.equal(replay.headers.location, '/back-office/sign-in');
  const post = await a.app.inject({
    method: 'POST', url: '/back-office/keys', headers: { cookie: `fc_session=${cookie}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'role=full&label=x',
  });
  t.equal(post.statusCode, 303);
  t.equal(a.store.apiKeys.list().filter((k) => k.label === 'x').length, 0, 'nothing was made');
});

t.test('bodies: only urlencoded forms up to 64 KiB', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.get('/back-office/sign-in');
  const big = await v.post('/back-office/sign-in', { email: 'x@example.com', password: 'p'.repeat(70 * 1024) });
  t.equal(big.statusCode, 413);
  t.match(big.headers['content-type'], /^text\/html/);
  const json = await a.app.inject({
    method: 'POST', url: '/back-office/sign-in', headers: { 'content-type': 'application/json' }, payload: '{}',
  });
  t.equal(json.statusCode, 415);
  t.match(json.headers['content-type'], /^text\/html/);
});

t.test('what operators type is escaped on every page', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.register('eve@example.com');
  await v.get('/back-office/keys');
  const made = await v.post('/back-office/keys', { label: '<script>alert(1)</script>"x', role: 'match', signing: 'none' });
  t.equal(made.statusCode, 303);
  const list = await v.get('/back-office/keys');
  t.notMatch(list.body, /<script>alert/);
  t.match(list.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt;&quot;x/);
  const refused = await v.post('/back-office/keys', { label: 'y', role: '<b>admin</b>', signing: 'none' });
  t.equal(refused.statusCode, 400, 'a role not offered is refused');
  t.equal(a.store.apiKeys.list().filter((k) => k.label === 'y').length, 0);
});

t.test('a signing key pair: the private key downloads once; an uploaded public key is checked', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.register('sig@example.com');
  await v.get('/back-office/keys');
  t.equal((await v.post('/back-office/keys', { label: 'signer', role: 'full', signing: 'generate' })).statusCode, 303);
  const page = await v.get('/back-office/keys/new');
  t.match(page.body, /Download the private signing key/);
  t.notMatch(page.body, /PRIVATE KEY/, 'the private key is not in the page');
  const pem = await v.get('/back-office/keys/new/signing-key.pem');
  t.equal(pem.statusCode, 200);
  t.match(pem.headers['content-disposition'], /^attachment; filename="face-check-signing-key-[0-9a-f]{12}\.pem"$/);
  t.match(pem.body, /^-----BEGIN PRIVATE KEY-----/);
  t.equal((await v.get('/back-office/keys/new/signing-key.pem')).statusCode, 404, 'only once');
  t.ok(a.store.apiKeys.list().find((k) => k.label === 'signer')?.signingPublicKey, 'the key signs its requests');

  await v.get('/back-office/keys');
  const bad = await v.post('/back-office/keys', { label: 'own', role: 'full', signing: 'upload', publicKey: 'not a key' });
  t.equal(bad.statusCode, 400);
  t.match(bad.body, /publicKey/);
  t.equal(a.store.apiKeys.list().filter((k) => k.label === 'own').length, 0);
});

t.test('administration: administrators only; an activation code shown once and usable', async (t) => {
  const a = await cloudApp((c) => { c.plans.free_max_licences = 5; });
  t.teardown(() => a.close());
  await a.app.accounts.createByAdministrator('root@example.com', PASSWORD, { plan: 'paid', role: 'administrator' });
  const operator = new Visitor(a);
  await operator.register('op@example.com');
  const denied = await operator.get('/back-office/admin');
  t.equal(denied.statusCode, 404, 'an operator does not see that the page exists');
  await operator.get('/back-office/account');
  t.equal((await operator.post('/back-office/admin/activation-codes', { plan: 'free', validDays: '30' })).statusCode, 404);
  t.equal(a.store.activationCodes.list().length, 0, 'nothing issued');

  const admin = new Visitor(a);
  await admin.get('/back-office/sign-in');
  t.equal((await admin.post('/back-office/sign-in', { email: 'root@example.com', password: PASSWORD })).statusCode, 303);
  const overview = await admin.get('/back-office/admin');
  t.equal(overview.statusCode, 200);
  t.match(overview.body, /op@example\.com/, 'every account is listed');
  const issued = await admin.post('/back-office/admin/activation-codes', { plan: 'free', validDays: '7' });
  t.equal(issued.statusCode, 303);
  const shown = await admin.get(String(issued.headers.location));
  const code = /<code>([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})<\/code>/.exec(shown.body)?.[1];
  t.ok(code, 'the code is shown');
  t.notMatch((await admin.get('/back-office/admin')).body, new RegExp(code!), 'once');

  await operator.get('/back-office/licences');
  const added = await operator.post('/back-office/licences', { label: 'Gate 1', activationCode: code!.toLowerCase() });
  t.equal(added.statusCode, 303, 'the operator adds a licence with it');
  t.match(String(added.headers.location), /^\/back-office\/licences\/lic_[0-9a-f]{16}\?done=licence-added$/);
  const reused = await operator.post('/back-office/licences', { label: 'Gate 2', activationCode: code! });
  t.equal(reused.statusCode, 400, 'a used code is refused, with the reason');
  t.match(reused.body, /already used/);
});

t.test('administration: an invitation issued on the page opens the invited address\'s account only', async (t) => {
  const a = await cloudApp((c) => { c.accounts.registration = 'invitation'; });
  t.teardown(() => a.close());
  await a.app.accounts.createByAdministrator('root@example.com', PASSWORD, { plan: 'paid', role: 'administrator' });
  const admin = new Visitor(a);
  await admin.get('/back-office/sign-in');
  t.equal((await admin.post('/back-office/sign-in', { email: 'root@example.com', password: PASSWORD })).statusCode, 303);
  await admin.get('/back-office/admin');
  const wrong = await admin.post('/back-office/admin/activation-codes', { plan: 'free', validDays: '7', purpose: 'licence', email: 'x@example.com' });
  t.equal(wrong.statusCode, 400, 'an address is for a registration code only');
  const issued = await admin.post('/back-office/admin/activation-codes', { plan: 'free', validDays: '7', purpose: 'registration', email: 'new@example.com' });
  t.equal(issued.statusCode, 303);
  const shown = await admin.get(String(issued.headers.location));
  const code = /<code>([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})<\/code>/.exec(shown.body)![1];
  t.match((await admin.get('/back-office/admin')).body, /account for new@example\.com/, 'listed as an invitation');

  const stranger = new Visitor(a);
  await stranger.get('/back-office/register');
  const refused = await stranger.post('/back-office/register', { email: 'eve@example.com', password: PASSWORD, activationCode: code });
  t.equal(refused.statusCode, 400);
  t.match(refused.body, /another e-mail address/);
  const invited = new Visitor(a);
  await invited.get('/back-office/register');
  t.equal((await invited.post('/back-office/register', { email: 'new@example.com', password: PASSWORD, activationCode: code })).statusCode, 303);
});

t.test('password change: the current one is checked; other sessions end, this one stays', async (t) => {
  const a = await cloudApp();
  t.teardown(() => a.close());
  const first = new Visitor(a);
  await first.register('pw@example.com');
  const second = new Visitor(a);
  await second.get('/back-office/sign-in');
  t.equal((await second.post('/back-office/sign-in', { email: 'pw@example.com', password: PASSWORD })).statusCode, 303);
  t.equal((await second.get('/back-office/keys')).statusCode, 200, 'a second session');

  await first.get('/back-office/password');
  const wrong = await first.post('/back-office/password', { currentPassword: 'not it at all', newPassword: 'a brand new passphrase' });
  t.equal(wrong.statusCode, 401);
  t.match(wrong.body, /the current password is wrong/);
  const short = await first.post('/back-office/password', { currentPassword: PASSWORD, newPassword: 'short' });
  t.equal(short.statusCode, 400);
  t.match(short.body, /at least 10 characters/);
  const ok = await first.post('/back-office/password', { currentPassword: PASSWORD, newPassword: 'a brand new passphrase' });
  t.equal(ok.statusCode, 303);
  t.equal((await first.get('/back-office/keys')).statusCode, 200, 'this session stays');
  t.equal((await second.get('/back-office/keys')).statusCode, 303, 'the other one ended');

  const again = new Visitor(a);
  await again.get('/back-office/sign-in');
  t.equal((await again.post('/back-office/sign-in', { email: 'pw@example.com', password: PASSWORD })).statusCode, 401, 'the old password is refused');
  t.equal((await again.post('/back-office/sign-in', { email: 'pw@example.com', password: 'a brand new passphrase' })).statusCode, 303);
});

t.test('licence: grants by checkbox, release of the device binding, revoke after a confirmation', async (t) => {
  const a = await cloudApp((c) => { c.plans.free_activation_code = false; });
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.register('lic@example.com');
  const list = await v.get('/back-office/licences');
  t.notMatch(list.body, /name="activationCode"/, 'no code field where the plan needs none');
  const added = await v.post('/back-office/licences', { label: 'Kiosk' });
  t.equal(added.statusCode, 303);
  const url = String(added.headers.location).split('?')[0];
  const licenceId = url.split('/').pop()!;
  const scope = { accountId: a.store.licences.get(licenceId)!.accountId };

  // The camera and port of the installed device, picked in the GET form beside the command.
  const plain = await v.get(url);
  t.match(plain.body, /<select id="install-camera" name="camera">/);
  t.notMatch(plain.body, /--camera|--port/, 'no choice: the command leaves the defaults to device install');
  const picked = await v.get(`${url}?camera=openni2&port=9090`);
  t.match(picked.body, /device install [^<]*--camera openni2 --port 9090&#39;<\/code>/, 'the command sets up the picked camera and port');
  t.match(picked.body, /<option value="openni2" selected>/, 'the pick stays selected');
  // Every compiled source a board can run (not replay, which needs a recording there), or none.
  const cameras = [...cameraSourceNames().filter((n) => n !== 'replay'), 'none'].join(', ');
  for (const [query, problem] of [['camera=kinect2', new RegExp(`The camera is one of ${cameras}`)], ['port=70000', /The port is a number from 1 to 65535/],
    ['camera=%27%3Bid', /The camera is one of/]] as const) {
    const refused = await v.get(`${url}?${query}`);
    t.equal(refused.statusCode, 200, query);
    t.match(refused.body, problem, query);
    t.notMatch(refused.body, /--camera|--port/, `${query}: the command without the refused pick`);
  }
  const saved = await v.post(`${url}/grants`, { label: 'Kiosk 2', grant: ['compare', 'live-face'], maxPersons: '50' });
  t.equal(saved.statusCode, 303);
  let licence = await a.app.licences.get(scope, licenceId);
  t.same([licence.label, licence.grants, licence.limits.maxPersons], ['Kiosk 2', ['live-face', 'compare'], 50]);
  const bad = await v.post(`${url}/grants`, { label: 'Kiosk 2', grant: ['everything'], maxPersons: '' });
  t.equal(bad.statusCode, 400, 'an unknown grant is refused by the service');
  t.match(bad.body, /unknown grant/);
  t.same((await a.app.licences.get(scope, licenceId)).grants, ['live-face', 'compare'], 'unchanged');
  await v.post(`${url}/grants`, { label: 'Kiosk 2', maxPersons: '' });
  t.same((await a.app.licences.get(scope, licenceId)).grants, [], 'no box checked: no grant');

  // A device checks in: the line shows the binding and the check; releasing clears the binding.
  const check = await a.app.inject({
    method: 'POST', url: '/licence/v1/check', headers: { 'content-type': 'application/json' },
    payload: { licenceKey: licence.licenceKey, fingerprint: 'ab'.repeat(32), nonce: 'n'.repeat(20), version: '1.2.3', persons: 2, usage: [] },
  });
  t.equal(check.statusCode, 200, check.body);
  const bound = await v.get(url);
  t.match(bound.body, /abababababababab… \(bound/);
  t.match(bound.body, /version 1\.2\.3, 2 persons/);
  t.equal((await v.post(`${url}/release`, {})).statusCode, 303);
  t.equal(a.store.licences.get(licenceId)!.device, null, 'released');

  const confirm = await v.get(`${url}/revoke`);
  t.match(confirm.body, /This cannot be undone/);
  t.equal(a.store.licences.get(licenceId)!.status, 'active', 'the confirmation page changes nothing');
  t.equal((await v.post(`${url}/revoke`, {})).statusCode, 303);
  t.equal(a.store.licences.get(licenceId)!.status, 'revoked');
  const after = await v.get(url);
  t.notMatch(after.body, /Save grants and settings|fcl_/, 'no settings and no installation command on a revoked licence');
  licence = await a.app.licences.get(scope, licenceId);
  t.equal(licence.status, 'revoked');
});

t.test('licence: device API keys created on the licence page, shown once, revoked after a confirmation', async (t) => {
  const a = await cloudApp((c) => { c.plans.free_activation_code = false; });
  t.teardown(() => a.close());
  const v = new Visitor(a);
  await v.register('devkeys@example.com');
  await v.get('/back-office/licences');
  const url = String((await v.post('/back-office/licences', { label: 'Kiosk' })).headers.location).split('?')[0];
  const licenceId = url.split('/').pop()!;
  const keysOf = () => a.store.licences.get(licenceId)!.deviceKeys ?? [];

  const page = await v.get(url);
  t.match(page.body, /<h2 id="device-keys">Device API keys<\/h2>/);
  t.match(page.body, /No device keys yet\./);
  const refused = await v.post(`${url}/keys`, { label: 'x', role: 'root', signing: 'none' });
  t.equal(refused.statusCode, 400, 'an unknown role');
  t.match(refused.body, /Choose one of the roles offered/);

  const made = await v.post(`${url}/keys`, { label: 'Turnstile', role: 'match', signing: 'generate' });
  t.equal(made.statusCode, 303);
  t.equal(made.headers.location, `/back-office/licences/${licenceId}/keys/new`);
  const shown = await v.get(String(made.headers.location));
  const key = /<code>(fcd_[A-Za-z0-9_-]{32})<\/code>/.exec(shown.body)?.[1];
  t.ok(key, 'the key is shown on the page after its creation');
  t.match(shown.body, /Download the private signing key/);
  t.notMatch(shown.body, /PRIVATE KEY/, 'the private key is not in the page');
  t.match((await v.get('/back-office/keys/new/signing-key.pem')).body, /^-----BEGIN PRIVATE KEY-----/, 'the signing key downloads once');
  t.notMatch((await v.get(String(made.headers.location))).body, /fcd_/, 'a reload shows the key no more');
  const [record] = keysOf();
  t.match(record, { role: 'match', label: 'Turnstile', revoked: null });
  t.ok(record.signingPublicKey, 'the key signs its requests');
  t.notOk(JSON.stringify(keysOf()).includes(key!), 'only its hash is kept');

  const listed = await v.get(url);
  t.match(listed.body, new RegExp(`<code>${record.keyId}</code>`), 'listed by its id');
  t.notMatch(listed.body, /fcd_[A-Za-z0-9_-]{32}/, 'never the key');

  // Another account reaches neither the licence's keys nor their revocation.
  const other = new Visitor(a);
  await other.register('other@example.com');
  t.equal((await other.get(`${url}/keys/${record.keyId}/revoke`)).statusCode, 404);
  await other.get('/back-office/licences');
  t.equal((await other.post(`${url}/keys/${record.keyId}/revoke`, {})).statusCode, 404);
  t.equal((await other.post(`${url}/keys`, { label: 'x', role: 'full', signing: 'none' })).statusCode, 404);
  t.equal(keysOf().length, 1, 'nothing made for the other account');

  const confirm = await v.get(`${url}/keys/${record.keyId}/revoke`);
  t.match(confirm.body, /This cannot be undone/);
  t.equal(keysOf()[0].revoked, null, 'the confirmation page changes nothing');
  const revoked = await v.post(`${url}/keys/${record.keyId}/revoke`, {});
  t.equal(revoked.statusCode, 303);
  t.equal(revoked.headers.location, `${url}?done=device-key-revoked`);
  t.ok(keysOf()[0].revoked, 'revoked');
  t.match((await v.get(url)).body, /revoked /);
});

t.test('every authenticated request is counted per key and day; written in batches and at close', async (t) => {
  const a = await cloudApp();
  const v = new Visitor(a);
  const key = await v.register('count@example.com');
  const keyId = a.store.apiKeys.lookup(key)!.keyId;
  for (let i = 0; i < 3; i++) await a.call({ method: 'GET', url: '/person/face/x', key });
  await a.call({ method: 'GET', url: '/person/face/x', key: 'fc_unknown' });
  const [today] = lastDays(new Date(), 1);
  t.same(await a.store.keyUsage.range(keyId, today, today), [{ day: today, requests: 3 }], 'counted (unknown keys not)');
  const usage = await v.get('/back-office/usage');
  t.match(usage.body, new RegExp(`data-day="${today}" data-requests="3"`), 'the chart shows them');
  await a.stop();
  const store = await openStore(a.config.storage.path);
  t.same(await store.keyUsage.range(keyId, today, today), [{ day: today, requests: 3 }], 'written when the store closed');
  await store.close();
  await a.close();
});

t.test('key usage: increments stay in memory until a flush writes them in one go', async (t) => {
  const dir = tempDir();
  const root = open({ path: path.join(dir, 'db'), compression: false, maxDbs: 4 });
  t.teardown(async () => { await root.close(); });
  const counting = lmdbKeyUsage(root, 60_000);
  const reader = lmdbKeyUsage(root);
  counting.record('k1', new Date('2026-03-01T10:00:00Z'));
  counting.record('k1', new Date('2026-03-01T23:59:59Z'));
  counting.record('k1', new Date('2026-03-02T00:00:00Z'));
  counting.record('k2', new Date('2026-03-01T12:00:00Z'));
  t.same(await reader.range('k1', '2026-03-01', '2026-03-31'), [], 'nothing written yet');
  t.same(await counting.range('k1', '2026-03-01', '2026-03-31'), [{ day: '2026-03-01', requests: 2 }, { day: '2026-03-02', requests: 1 }]);
  await counting.flush();
  t.same(await reader.range('k1', '2026-03-01', '2026-03-31'), [{ day: '2026-03-01', requests: 2 }, { day: '2026-03-02', requests: 1 }]);
  t.same(await reader.range('k1', '2026-03-02', '2026-03-02'), [{ day: '2026-03-02', requests: 1 }], 'a range is bounded by its days');
  t.same(await reader.range('k2', '2026-03-01', '2026-03-31'), [{ day: '2026-03-01', requests: 1 }]);
  counting.record('k1', new Date('2026-03-01T11:00:00Z'));
  await counting.close();
  t.same(await reader.range('k1', '2026-03-01', '2026-03-01'), [{ day: '2026-03-01', requests: 3 }], 'added to, at close');
  counting.record('k1', new Date('2026-03-01T11:00:00Z'));
  t.same(await counting.range('k1', '2026-03-01', '2026-03-01'), [{ day: '2026-03-01', requests: 3 }], 'nothing counted after close');
});

t.test('html escapes every value unless it is markup made by html or trusted()', async (t) => {
  t.equal(escapeHtml(`<a href="x" onclick='y'>&\``), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;');
  const name = '<img src=x onerror=alert(1)>';
  t.equal(html`<p title="${name}">${name}</p>`.text,
    '<p title="&lt;img src=x onerror=alert(1)&gt;">&lt;img src=x onerror=alert(1)&gt;</p>');
  t.equal(html`<ul>${['<a>', html`<li>${'&'}</li>`]}</ul>`.text, '<ul>&lt;a&gt;<li>&amp;</li></ul>', 'arrays, nested markup');
  t.equal(html`${null}${undefined}${false}${0}`.text, '0');
  t.equal(html`${trusted('<br>')}`.text, '<br>');
});

t.test('cookies, CSRF tokens and one-time secrets', async (t) => {
  t.same([...parseCookies('a=1; fc_session=fcs_x%2By; a=2; bad; ="q"')], [['a', '1'], ['fc_session', 'fcs_x+y']]);
  const tokens = new CsrfTokens();
  const token = tokens.tokenFor('session-hash-1');
  t.ok(tokens.verify('session-hash-1', token));
  t.notOk(tokens.verify('session-hash-2', token), 'bound to its session');
  t.notOk(tokens.verify('session-hash-1', `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`), 'one character off');
  t.notOk(tokens.verify('session-hash-1', ''));
  t.notOk(new CsrfTokens().verify('session-hash-1', token), 'another secret, another token');

  let now = 0;
  const reveals = new OneTimeReveals(() => now);
  reveals.put('s1', { apiKey: { keyId: 'k', key: 'fc_secret', role: 'full', label: '' }, signingKey: { keyId: 'k', pem: 'PEM' } });
  t.notOk(reveals.takeApiKey('s2'), 'bound to its session');
  t.equal(reveals.takeApiKey('s1')?.key, 'fc_secret');
  t.notOk(reveals.takeApiKey('s1'), 'taken once');
  t.ok(reveals.hasSigningKey('s1'), 'the signing key waits for its download');
  t.equal(reveals.takeSigningKey('s1')?.pem, 'PEM');
  t.notOk(reveals.hasSigningKey('s1'));
  reveals.put('s3', { activationCode: { code: 'C', plan: 'free', expires: '' } });
  now += REVEAL_TTL_MS;
  t.notOk(reveals.takeActivationCode('s3'), 'gone after its time');
});

t.test('usage chart: one bar with a title per day, a table fallback, escaped text', async (t) => {
  t.equal(scaleTop(0), 1);
  t.equal(scaleTop(7), 10);
  t.equal(scaleTop(12), 20);
  t.equal(scaleTop(100), 100);
  t.equal(scaleTop(101), 200);
  const days = lastDays(new Date('2026-03-10T12:00:00Z'), 3);
  t.same(days, ['2026-03-08', '2026-03-09', '2026-03-10']);
  const chart = usageChart({ id: 'k1', title: 'Key <x>', days: [{ day: days[0], requests: 0 }, { day: days[1], requests: 5 }, { day: days[2], requests: 10 }] }).text;
  t.equal(chart.match(/<rect [^>]*class="bar"/g)?.length, 3);
  t.match(chart, /<title>2026-03-09: 5 requests<\/title>/);
  t.match(chart, /data-day="2026-03-10" data-requests="10"[^>]*\/>/);
  t.match(chart, /y="12" width="18" height="120" class="bar" data-day="2026-03-10"/, 'the largest day fills the plot');
  t.match(chart, /<td>2026-03-09<\/td><td>5<\/td>/, 'the table holds the numbers');
  t.match(chart, /Key &lt;x&gt;/);
  t.notMatch(chart, /Key <x>/);
});
