// The cloud's licence files routes: the public key with its sha256 (no Api-Key), the package for an active
// licence key only (the licence errors explained otherwise), both in the OpenAPI document, neither in
// device mode.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { publicKeySha256 } from '../../src/licensing/licence-document';
import type { LicenceKeyState } from '../../src/licensing/cloud/licence-server';
import { startTestApp, tempDir } from '../helpers/app';
import { writeTinyTarball } from '../helpers/tiny-package';

const key = (c: string) => `fcl_${c.repeat(32)}`;
const STATES: Record<string, LicenceKeyState> = { [key('a')]: 'active', [key('r')]: 'revoked', [key('e')]: 'expired' };

async function cloud(t: Test, licenceKeyState?: (k: string) => LicenceKeyState) {
  const files = tempDir();
  t.teardown(() => fs.rmSync(files, { recursive: true, force: true }));
  const tarball = writeTinyTarball(files, { version: '4.5.6' });
  const app = await startTestApp({
    tune: (c) => { c.server.mode = 'cloud'; c.licensing.package_file = tarball; },
    deps: { licenceKeyState },
  });
  t.teardown(() => app.close());
  // The default PackageFile of the app reads [licensing] package_file from the app's config.
  return { app, tarball };
}

t.test('GET /licence/v1/public-key answers the service public key and its sha256, without an Api-Key', async (t) => {
  const { app } = await cloud(t);
  const res = await app.call({ method: 'GET', url: '/licence/v1/public-key', key: null });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['publicKey', 'sha256']);
  t.equal(body.publicKey, (await app.store.serviceKeys.responseSigning()).publicKey);
  t.equal(body.sha256, publicKeySha256(body.publicKey));
  t.match(body.publicKey, /^-----BEGIN PUBLIC KEY-----/);
  t.notMatch(res.body, /PRIVATE/);
});

t.test('GET /licence/v1/package streams the tarball for an active licence key', async (t) => {
  const { app, tarball } = await cloud(t, (k) => STATES[k] ?? 'unknown');
  const res = await app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers: { 'licence-key': key('a') } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/gzip');
  t.equal(res.headers['content-disposition'], 'attachment; filename="face-check-4.5.6.tgz"');
  const bytes = res.rawPayload;
  t.same(bytes, fs.readFileSync(tarball), 'the file itself');
  const sha = crypto.createHash('sha256').update(bytes).digest('hex');
  t.equal(res.headers['x-package-sha256'], sha);
  t.equal(Number(res.headers['content-length']), bytes.length);
});

t.test('GET /licence/v1/package refuses missing, malformed, unknown, revoked and expired keys, explained', async (t) => {
  const asked: string[] = [];
  const { app } = await cloud(t, (k) => { asked.push(k); return STATES[k] ?? 'unknown'; });
  const get = (headers: Record<string, string>) => app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers });
  const cases: [Record<string, string>, number, string, RegExp][] = [
    [{}, 401, 'LC_005', /^Unknown licence key: send the licence key in the Licence-Key header$/],
    [{ 'licence-key': 'fcl_short' }, 401, 'LC_005', /^Unknown licence key: the Licence-Key header is not a licence key/],
    [{ 'licence-key': key('u') }, 401, 'LC_005', /^Unknown licence key: no licence has this key/],
    [{ 'licence-key': key('r') }, 403, 'LC_006', /^Licence revoked: this licence was revoked/],
    [{ 'licence-key': key('e') }, 403, 'LC_007', /^Licence expired: this licence has expired/],
    // An Api-Key is no licence key.
    [{ 'api-key': 'test-bootstrap-key-0123456789' }, 401, 'LC_005', /Licence-Key header/],
  ];
  for (const [headers, status, code, message] of cases) {
    const res = await get(headers);
    t.equal(res.statusCode, status, JSON.stringify(headers));
    t.same(Object.keys(res.json()).sort(), ['code', 'message']);
    t.equal(res.json().code, code);
    t.match(res.json().message, message);
    t.notOk(res.headers['x-package-sha256'], 'nothing of the package');
  }
  t.same(asked, [key('u'), key('r'), key('e')], 'only well-formed keys are looked up');
});

t.test('without a licence lookup every key is unknown: the package is never served by default', async (t) => {
  const { app } = await cloud(t);
  const res = await app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers: { 'licence-key': key('a') } });
  t.equal(res.statusCode, 401);
  t.equal(res.json().code, 'LC_005');
});

t.test('a package that cannot be made is a 500 without details', async (t) => {
  const { app } = await cloud(t, () => 'active');
  fs.rmSync(app.config.licensing.package_file);
  const res = await app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers: { 'licence-key': key('a') } });
  t.equal(res.statusCode, 500);
  t.equal(res.json().code, 'INTERNAL');
  t.notMatch(res.body, /package_file|tgz|\//);
});

t.test('the routes are in the OpenAPI document under the licence tag', async (t) => {
  const { app } = await cloud(t);
  const doc = (await app.call({ method: 'GET', url: '/openapi.json', key: null })).json();
  t.same(doc.paths['/licence/v1/public-key'].get.tags, ['licence']);
  const pkg = doc.paths['/licence/v1/package'].get;
  t.same(pkg.tags, ['licence']);
  t.ok(pkg.responses['200'].content['application/gzip'], 'the 200 is a gzip file');
  t.ok(pkg.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'licence-key'));
  t.ok(pkg.responses['401'] && pkg.responses['403']);
});

t.test('device mode has neither route', async (t) => {
  const app = await startTestApp({ tune: (c) => { c.server.mode = 'device'; c.camera.source = 'none'; } });
  t.teardown(() => app.close());
  for (const url of ['/licence/v1/public-key', '/licence/v1/package']) {
    const res = await app.call({ method: 'GET', url, key: null, headers: { 'licence-key': key('a') } });
    t.equal(res.statusCode, 404, url);
  }
});

t.test('the default package is packed from the program into the storage folder', async (t) => {
  // Keeps the wiring honest: with no package_file and no PackageFile given, the app makes its own.
  const app = await startTestApp({ tune: (c) => { c.server.mode = 'cloud'; }, deps: { licenceKeyState: () => 'active' } });
  t.teardown(() => app.close());
  const res = await app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers: { 'licence-key': key('a') } });
  t.equal(res.statusCode, 200);
  const file = path.join(app.config.storage.path, 'packages', `face-check-${res.headers['x-package-version']}.tgz`);
  t.same(res.rawPayload, fs.readFileSync(file));
});
