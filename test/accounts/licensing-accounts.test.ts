// Operators' accounts through the account API (/account/v1, cloud mode): registration with the free test
// plan's key (spec 5), sign-in and its throttle, session expiry, sign-out, password changes, one account's
// keys hidden from another, the quota by plan, and what the store keeps of passwords and session tokens.
import fs from 'node:fs';
import path from 'node:path';
import Fastify from 'fastify';
import { open } from 'lmdb';
import t from 'tap';
import type { Config } from '../../src/config/types';
import { AccountService } from '../../src/accounts/accounts';
import { verifyPassword } from '../../src/accounts/passwords';
import errorHandler from '../../src/http/plugins/error-handler';
import operatorSession from '../../src/http/plugins/operator-session';
import { InProcessThrottleEvents } from '../../src/storage/lmdb/sign-in-throttle';
import { SignInThrottle } from '../../src/storage/sign-in-throttle';
import { hashSessionToken } from '../../src/storage/records';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { openStore } from '../../src/storage/lmdb/store';
import { defaultConfig } from '../../src/config/load';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';

const START = Date.parse('2026-03-02T09:00:00.000Z');
const PASSWORD = 'correct horse battery';

interface Cloud extends TestApp {
  clock: { ms: number };
  api(method: string, url: string, opts?: { body?: unknown; token?: string; ip?: string; apiKey?: string }): Promise<{
    status: number; body: any; headers: Record<string, unknown>;
  }>;
  register(email: string, password?: string): Promise<{ accountId: string; key: string; keyId: string }>;
  signIn(email: string, password?: string, ip?: string): Promise<string>;
}

async function cloud(t: { teardown(fn: () => unknown): void }, tune: (c: Config) => void = () => undefined): Promise<Cloud> {
  const clock = { ms: START };
  const a = await startTestApp({ tune: (c) => { c.server.mode = 'cloud'; tune(c); }, deps: { now: () => new Date(clock.ms) } });
  t.teardown(() => a.close());
  const api: Cloud['api'] = async (method, url, opts = {}) => {
    const headers: Record<string, string> = {};
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.apiKey) headers['api-key'] = opts.apiKey;
    const res = await a.app.inject({
      method: method as 'GET', url, headers, remoteAddress: opts.ip ?? '192.0.2.1',
      ...(opts.body !== undefined ? { payload: JSON.stringify(opts.body) } : {}),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined, headers: res.headers };
  };
  const register: Cloud['register'] = async (email, password = PASSWORD) => {
    const res = await api('POST', '/account/v1/register', { body: { email, password }, ip: `198.51.100.${email.length}` });
    if (res.status !== 200) throw new Error(`register ${email}: ${res.status} ${JSON.stringify(res.body)}`);
    return { accountId: res.body.account.accountId, key: res.body.apiKey.key, keyId: res.body.apiKey.keyId };
  };
  const signIn: Cloud['signIn'] = async (email, password = PASSWORD, ip = '203.0.113.9') => {
    const res = await api('POST', '/account/v1/sessions', { body: { email, password }, ip });
    if (res.status !== 200) throw new Error(`sign in ${email}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.token;
  };
  return Object.assign(a, { clock, api, register, signIn });
}

t.test('register: the free test plan key is shown once and works on the person API', async (t) => {
  const c = await cloud(t);
  const res = await c.api('POST', '/account/v1/register', { body: { email: ' Ann@Example.com ', password: PASSWORD } });
  t.equal(res.status, 200);
  t.equal(res.headers['cache-control'], 'no-store', 'an answer with a key in it is not cached');
  const { account, apiKey } = res.body;
  t.match(account, { email: 'ann@example.com', plan: 'free', role: 'operator', created: new Date(START).toISOString() });
  t.match(account.accountId, /^acc_[A-Za-z0-9_-]{12}$/);
  t.match(apiKey, { role: 'full', label: 'free test plan' });
  t.match(apiKey.key, /^fc_[A-Za-z0-9_-]{32}$/);

  const person = await c.api('GET', '/person/face/x', { apiKey: apiKey.key });
  t.same([person.status, person.body.code], [404, 'NF_001'], 'the key authenticates on the person API');

  const token = await c.signIn('ANN@example.com');
  const keys = await c.api('GET', '/account/v1/keys', { token });
  t.equal(keys.status, 200);
  t.same(keys.body.keys.map((k: { keyId: string }) => k.keyId), [apiKey.keyId]);
  t.notMatch(JSON.stringify(keys.body), apiKey.key, 'the key itself is never listed again');
  t.equal(keys.body.keys[0].lastUsed, new Date(keys.body.keys[0].lastUsed).toISOString(), 'its use is recorded');

  const me = await c.api('GET', '/account/v1/account', { token });
  t.same(me.body, { ...account, quota: { requestsPerDay: 100, usedToday: 1, leftToday: 99 }, persons: 0 });
});

t.test('register: refusals say what to fix', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const again = await c.api('POST', '/account/v1/register', { body: { email: 'ANN@EXAMPLE.COM', password: PASSWORD } });
  t.same([again.status, again.body.code], [400, 'AC_001'], 'e-mail addresses compare case-insensitively');
  t.match(again.body.message, /^An account already exists with this e-mail address: /);

  const weak = await c.api('POST', '/account/v1/register', { body: { email: 'bob@example.com', password: 'short' } });
  t.same(weak.body, { code: 'R_003', message: 'Fields validation exception: password: at least 10 characters' });
  for (const email of ['bob', 'bob@@example.com', 'bob@exa mple.com', '@example.com', 'bob@', `${'b'.repeat(250)}@example.com`]) {
    const bad = await c.api('POST', '/account/v1/register', { body: { email, password: PASSWORD } });
    t.equal(bad.body.code, 'R_003', email);
    t.match(bad.body.message, /^Fields validation exception: .*email/, `${email}: ${bad.body.message}`);
  }
  const extra = await c.api('POST', '/account/v1/register', { body: { email: 'bob@example.com', password: PASSWORD, plan: 'paid' } });
  t.same(extra.body, { code: 'R_003', message: 'Fields validation exception: body must NOT have additional properties (plan)' });
  const noBody = await c.api('POST', '/account/v1/register');
  t.equal(noBody.body.code, 'R_002');
  t.equal(c.store.accounts.list().length, 1, 'nothing was created by the refused requests');
});

t.test('register: closed registration is refused', async (t) => {
  const c = await cloud(t, (cfg) => { cfg.accounts.registration = 'closed'; });
  const res = await c.api('POST', '/account/v1/register', { body: { email: 'ann@example.com', password: PASSWORD } });
  t.equal(res.status, 403);
  t.match(res.body, { code: 'FORBIDDEN', message: /^Forbidden: registration is closed/ });
  t.equal(c.store.accounts.list().length, 0);
});

t.test('the OpenAPI document describes the account API', async (t) => {
  const c = await cloud(t);
  const doc = (await c.api('GET', '/openapi.json')).body;
  // The licence routes under the same prefix are the licence API's (tagged licence).
  const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/account/v1/') && !p.startsWith('/account/v1/licences')).sort();
  t.same(paths, ['/account/v1/account', '/account/v1/keys', '/account/v1/keys/{keyId}', '/account/v1/password',
    '/account/v1/register', '/account/v1/sessions', '/account/v1/sessions/current']);
  for (const p of paths) for (const op of Object.values(doc.paths[p]) as { tags: string[] }[]) t.same(op.tags, ['account'], p);
  const keyView = doc.paths['/account/v1/keys'].get.responses['200'].content['application/json'].schema.properties.keys.items;
  t.same(keyView.properties.lastUsed, { type: 'string', format: 'date-time', nullable: true,
    description: 'Last successful authentication, to the minute; null when never used.' });
});

t.test('device mode has no account API', async (t) => {
  const c = await cloud(t, (cfg) => { cfg.server.mode = 'device'; });
  const res = await c.api('POST', '/account/v1/register', { body: { email: 'ann@example.com', password: PASSWORD } });
  t.equal(res.status, 404);
  t.notOk(c.app.hasDecorator('accounts'));
});

t.test('sign in, wrong password, sign out, missing and unknown tokens', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const wrong = await c.api('POST', '/account/v1/sessions', { body: { email: 'ann@example.com', password: 'wrong password!' } });
  t.same(wrong.body, { code: 'AC_002', message: 'Wrong e-mail address or password: check both and try again' });
  t.equal(wrong.status, 401);
  const unknown = await c.api('POST', '/account/v1/sessions', { body: { email: 'nobody@example.com', password: PASSWORD } });
  t.same(unknown.body, wrong.body, 'an unknown address is answered like a wrong password');

  const res = await c.api('POST', '/account/v1/sessions', { body: { email: 'ann@example.com', password: PASSWORD } });
  t.equal(res.status, 200);
  t.match(res.body.token, /^fcs_[A-Za-z0-9_-]{32}$/);
  t.equal(res.body.expires, new Date(START + 12 * 3_600_000).toISOString(), 'session_max_hours after sign-in');
  const token = res.body.token;
  t.equal((await c.api('GET', '/account/v1/account', { token })).status, 200);

  const none = await c.api('GET', '/account/v1/account');
  t.same([none.status, none.body.code], [401, 'UNAUTHORIZED']);
  t.match(none.body.message, /^Unauthorized: sign in first/);
  const forged = await c.api('GET', '/account/v1/account', { token: `fcs_${'A'.repeat(32)}` });
  t.match([forged.status, forged.body.message], [401, /sign in first/]);
  t.equal((await c.api('GET', '/account/v1/account', { apiKey: 'test-bootstrap-key-0123456789' })).status, 401,
    'an API key is not a session');

  t.same((await c.api('DELETE', '/account/v1/sessions/current', { token })).body, { signedOut: true });
  t.equal((await c.api('GET', '/account/v1/account', { token })).status, 401, 'signed out');
});

t.test('throttle: 5 failures per account and address lock that pair, the right password included, until the oldest leaves the window', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const attempt = (password: string, ip = '203.0.113.7') =>
    c.api('POST', '/account/v1/sessions', { body: { email: 'Ann@example.com', password }, ip });
  // A success clears the pair's count: four failures, a success, four more failures still pass.
  for (let i = 0; i < 4; i++) t.equal((await attempt('wrong password!')).status, 401);
  t.equal((await attempt(PASSWORD)).status, 200);
  for (let i = 0; i < 4; i++) t.equal((await attempt('wrong password!')).status, 401);
  const firstFailure = c.clock.ms;
  c.clock.ms += 60_000;
  t.equal((await attempt('wrong password!')).status, 401, 'the fifth failure');
  c.clock.ms += 10_000;
  const locked = await attempt(PASSWORD);
  t.equal(locked.status, 429, 'the right password is refused from that address while the pair is locked');
  const wait = Math.ceil((firstFailure + 15 * 60_000 - c.clock.ms) / 1000);
  t.equal(locked.headers['retry-after'], String(wait), 'Retry-After: until the oldest failure leaves the window');
  t.same(locked.body, { code: 'AC_003', message: `Too many failed sign-in attempts: try again in ${wait} seconds` });
  t.equal((await attempt(PASSWORD, '203.0.113.8')).status, 200, 'another address is not the locked pair');
  c.clock.ms = firstFailure + 15 * 60_000 - 1000;
  t.equal((await attempt(PASSWORD)).status, 429, 'still inside the window');
  c.clock.ms = firstFailure + 15 * 60_000 + 1;
  t.equal((await attempt(PASSWORD)).status, 200, 'the oldest failure left the window');
});

t.test('throttle: sign_in_address_max_failures failures from one address lock that address for every account', async (t) => {
  const c = await cloud(t, (cfg) => { cfg.accounts.sign_in_address_max_failures = 6; });
  await c.register('ann@example.com');
  for (let i = 0; i < 6; i++) {
    const email = i % 2 ? `guess${i}@example.com` : `other${i}@example.com`;
    t.equal((await c.api('POST', '/account/v1/sessions', { body: { email, password: 'wrong password!' }, ip: '10.9.8.7' })).status, 401);
  }
  const locked = await c.api('POST', '/account/v1/sessions', { body: { email: 'ann@example.com', password: PASSWORD }, ip: '10.9.8.7' });
  t.same([locked.status, locked.body.code, locked.headers['retry-after']], [429, 'AC_003', '900']);
  const elsewhere = await c.api('POST', '/account/v1/sessions', { body: { email: 'ann@example.com', password: PASSWORD }, ip: '10.9.8.6' });
  t.equal(elsewhere.status, 200, 'another address, same account: allowed');
  const registration = await c.api('POST', '/account/v1/register', { body: { email: 'new@example.com', password: PASSWORD }, ip: '10.9.8.7' });
  t.same([registration.status, registration.body.code], [429, 'AC_003'], 'the locked address does not register either');
});

t.test('sessions end after session_idle_minutes unused and after session_max_hours whatever the use', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const idle = await c.signIn('ann@example.com');
  c.clock.ms += 29 * 60_000;
  t.equal((await c.api('GET', '/account/v1/account', { token: idle })).status, 200, 'used after 29 minutes');
  c.clock.ms += 29 * 60_000;
  t.equal((await c.api('GET', '/account/v1/account', { token: idle })).status, 200, '29 minutes after the last use');
  c.clock.ms += 30 * 60_000 + 1_000;
  const expired = await c.api('GET', '/account/v1/account', { token: idle });
  t.same([expired.status, expired.body.message], [401, 'Unauthorized: session expired; sign in again']);
  t.notOk(c.store.sessions.get(hashSessionToken(idle)), 'the expired session is removed');

  const busy = await c.signIn('ann@example.com');
  const signedInAt = c.clock.ms;
  while (c.clock.ms + 20 * 60_000 < signedInAt + 12 * 3_600_000) {
    c.clock.ms += 20 * 60_000;
    t.equal((await c.api('GET', '/account/v1/account', { token: busy })).status, 200);
  }
  c.clock.ms = signedInAt + 12 * 3_600_000;
  t.equal((await c.api('GET', '/account/v1/account', { token: busy })).status, 401, 'the absolute end, though used');
});

t.test('idle expiry is exact to the second: a session in use never ends early, an unused one within a second', async (t) => {
  const c = await cloud(t, (config) => { config.accounts.session_idle_minutes = 1; });
  await c.register('ann@example.com');
  const token = await c.signIn('ann@example.com');
  const use = () => c.api('GET', '/account/v1/account', { token }).then((r) => r.status);
  // Used every 25.5 s for five minutes: each use is well inside the minute since the one before.
  for (let i = 0; i < 12; i++) {
    c.clock.ms += 25_500;
    t.equal(await use(), 200, `use ${i + 1}`);
  }
  // 59.999 s after the last use it is alive; 60 s and a second after, it has ended.
  c.clock.ms += 59_999;
  t.equal(await use(), 200, 'alive just inside the minute');
  c.clock.ms += 61_000;
  t.equal(await use(), 401, 'ended once a minute passed unused');
});

t.test('a password change ends the other sessions; the old password stops working', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const here = await c.signIn('ann@example.com');
  const there = await c.signIn('ann@example.com');
  const change = (currentPassword: string, newPassword: string) =>
    c.api('PUT', '/account/v1/password', { token: here, body: { currentPassword, newPassword } });
  const wrong = await change('not the password', 'a new long password');
  t.same([wrong.status, wrong.body.code], [401, 'AC_002']);
  t.match(wrong.body.message, /the current password is wrong/);
  t.equal((await change(PASSWORD, 'short')).body.message, 'Fields validation exception: password: at least 10 characters');
  t.equal((await c.api('GET', '/account/v1/account', { token: there })).status, 200, 'refused changes end nothing');

  t.same((await change(PASSWORD, 'a new long password')).body, { changed: true });
  t.equal((await c.api('GET', '/account/v1/account', { token: here })).status, 200, 'the changing session stays');
  t.equal((await c.api('GET', '/account/v1/account', { token: there })).status, 401, 'the other session ended');
  const old = await c.api('POST', '/account/v1/sessions', { body: { email: 'ann@example.com', password: PASSWORD } });
  t.equal(old.body.code, 'AC_002', 'the old password no longer signs in');
  t.ok(await c.signIn('ann@example.com', 'a new long password'));
});

t.test('one operator can neither see nor revoke another\'s keys', async (t) => {
  const c = await cloud(t);
  const ann = await c.register('ann@example.com');
  const bob = await c.register('bob@example.com');
  const annToken = await c.signIn('ann@example.com');
  const bobToken = await c.signIn('bob@example.com');

  const made = await c.api('POST', '/account/v1/keys', { token: annToken, body: { role: 'match', label: 'gate 1' } });
  t.equal(made.status, 200);
  t.match(made.body, { role: 'match', label: 'gate 1', signing: false, created: new Date(START).toISOString() });
  t.notOk('signingKey' in made.body);
  const bobKeys = (await c.api('GET', '/account/v1/keys', { token: bobToken })).body.keys;
  t.same(bobKeys.map((k: { keyId: string }) => k.keyId), [bob.keyId], 'bob sees only his own key');

  const foreign = await c.api('DELETE', `/account/v1/keys/${made.body.keyId}`, { token: bobToken });
  const missing = await c.api('DELETE', '/account/v1/keys/ffffffffffff', { token: bobToken });
  t.same([foreign.status, foreign.body], [404, { code: 'NOT_FOUND', message: `Route not found: this account has no API key ${made.body.keyId}` }]);
  t.same([missing.status, missing.body], [404, { code: 'NOT_FOUND', message: 'Route not found: this account has no API key ffffffffffff' }],
    'answered exactly like a key that does not exist');
  t.equal((await c.api('GET', '/person/face/x', { apiKey: made.body.key })).status, 404, 'ann\'s key still works');

  const revoked = await c.api('DELETE', `/account/v1/keys/${ann.keyId}`, { token: annToken });
  t.equal(revoked.status, 200);
  t.equal(revoked.body.revoked, new Date(START).toISOString());
  t.equal((await c.api('GET', '/person/face/x', { apiKey: ann.key })).status, 403, 'a revoked key is refused');
  const annKeys = (await c.api('GET', '/account/v1/keys', { token: annToken })).body.keys;
  const revokedById = Object.fromEntries(annKeys.map((k: { keyId: string; revoked: string | null }) => [k.keyId, k.revoked !== null]));
  t.same(revokedById, { [ann.keyId]: true, [made.body.keyId]: false }, 'revoked keys stay listed');
});

t.test('keys: signing keys and uploaded public keys', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const token = await c.signIn('ann@example.com');
  const signing = await c.api('POST', '/account/v1/keys', { token, body: { role: 'full', signing: true } });
  t.equal(signing.status, 200);
  t.match(signing.body.signingKey, /^-----BEGIN PRIVATE KEY-----/);
  t.equal(signing.body.servicePublicKey, (await c.store.serviceKeys.responseSigning()).publicKey);
  const unsigned = await c.api('GET', '/person/face/x', { apiKey: signing.body.key });
  t.equal(unsigned.status, 401, 'requests with a signing key must be signed');
  t.notMatch(JSON.stringify(c.store.apiKeys.list()), /PRIVATE KEY/, 'the private half is not stored');

  const bad = await c.api('POST', '/account/v1/keys', { token, body: { role: 'full', publicKey: 'not a key' } });
  t.match(bad.body, { code: 'R_003', message: /^Fields validation exception: publicKey: not a public key/ });
  const both = await c.api('POST', '/account/v1/keys', { token, body: { role: 'full', signing: true, publicKey: 'x' } });
  t.match(both.body.message, /signing: true or a publicKey, not both/);
  const role = await c.api('POST', '/account/v1/keys', { token, body: { role: 'root' } });
  t.match(role.body, { code: 'R_003', message: /body\/role must be equal to one of the allowed values/ });
});

t.test('quota by plan: a free account is refused after free_requests_per_day, the paid plan lifts it', async (t) => {
  const c = await cloud(t, (cfg) => { cfg.plans.free_requests_per_day = 3; cfg.plans.paid_requests_per_day = 0; });
  const ann = await c.register('ann@example.com');
  for (let i = 0; i < 3; i++) t.equal((await c.api('GET', '/person/face/x', { apiKey: ann.key })).status, 404);
  const refused = await c.api('GET', '/person/face/x', { apiKey: ann.key });
  t.same([refused.status, refused.body.code], [400, 'CP_005']);
  const token = await c.signIn('ann@example.com');
  t.same((await c.api('GET', '/account/v1/account', { token })).body.quota, { requestsPerDay: 3, usedToday: 3, leftToday: 0 });

  t.equal((await c.app.accounts.setPlan(ann.accountId, 'paid'))?.plan, 'paid');
  t.equal((await c.api('GET', '/person/face/x', { apiKey: ann.key })).status, 404, 'the paid plan is unlimited here');
  t.same((await c.api('GET', '/account/v1/account', { token })).body.quota, { requestsPerDay: 0, usedToday: 3, leftToday: null });

  // A key of an account without a record (keys create --account) keeps [quota] requests_per_day (0 = unlimited).
  const plain = await c.store.apiKeys.create('acme', 'full', '', new Date(START).toISOString());
  for (let i = 0; i < 5; i++) t.equal((await c.api('GET', '/person/face/x', { apiKey: plain.key })).status, 404);
});

t.test('an API key\'s last use is written at most once a minute', async (t) => {
  const c = await cloud(t);
  const { key, record } = await c.store.apiKeys.create('acme', 'full', '', new Date(START).toISOString());
  const lastUsed = () => c.store.apiKeys.list().find((k) => k.keyId === record.keyId)!.lastUsed;
  await c.store.apiKeys.recordUse(key, new Date(START));
  t.equal(lastUsed(), new Date(START).toISOString());
  await c.store.apiKeys.recordUse(key, new Date(START + 59_000));
  t.equal(lastUsed(), new Date(START).toISOString(), 'not again within the minute');
  await c.store.apiKeys.recordUse(key, new Date(START + 60_000));
  t.equal(lastUsed(), new Date(START + 60_000).toISOString());
});

t.test('the store keeps a salted scrypt hash of the password and only the SHA-256 of session tokens', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  await c.register('bob@example.com');
  const token = await c.signIn('ann@example.com');
  await c.stop();

  const dbFile = path.join(c.config.storage.path, 'data.mdb');
  const raw = fs.readFileSync(dbFile);
  t.equal(raw.indexOf(PASSWORD), -1, 'the password is nowhere in the database file');
  t.equal(raw.indexOf(token), -1, 'nor the session token');
  t.equal(raw.indexOf(token.slice(4)), -1, 'nor its random part');

  const env = open({ path: c.config.storage.path, maxDbs: 32, readOnly: true });
  t.teardown(() => env.close());
  const accounts = [...env.openDB<{ email: string; passwordHash: string }, string>({ name: 'accounts' }).getRange()].map((e) => e.value);
  const [ann, bob] = ['ann@example.com', 'bob@example.com'].map((e) => accounts.find((a) => a.email === e)!);
  t.match(ann.passwordHash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/, 'scrypt N=2^15 r=8 p=1, 16-byte salt, 32-byte hash');
  t.not(ann.passwordHash, bob.passwordHash, 'salted: the same password hashes differently');
  t.notMatch(ann.passwordHash, PASSWORD);
  t.ok(await verifyPassword(PASSWORD, ann.passwordHash));
  t.notOk(await verifyPassword(`${PASSWORD}!`, ann.passwordHash));

  const sessionKeys = [...env.openDB<unknown, string>({ name: 'sessions' }).getKeys()];
  t.same(sessionKeys, [hashSessionToken(token)], 'the session is filed under the token\'s SHA-256');
});

t.test('operator-session plugin: administrator routes refuse operators (403), missing sessions are 401', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  const store = await openStore(path.join(dir, 'db'));
  t.teardown(() => store.close());
  const errors = testErrorCatalog();
  const accounts = new AccountService({ config, store: lmdbAsyncStore(store), errors });
  await accounts.createByAdministrator('root@example.com', PASSWORD, { plan: 'paid', role: 'administrator' });
  await accounts.createByAdministrator('op@example.com', PASSWORD, { plan: 'free', role: 'operator' });
  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(errorHandler, { errors });
  await app.register(operatorSession, { accounts, errors });
  app.get('/admin-only', { config: { operator: 'administrator' } }, async (request) => ({ who: request.operator?.email }));
  const get = (token?: string) => app.inject({ url: '/admin-only', headers: token ? { authorization: `Bearer ${token}` } : {} });

  const admin = (await accounts.signIn('root@example.com', PASSWORD, '192.0.2.1')).token;
  const operator = (await accounts.signIn('op@example.com', PASSWORD, '192.0.2.1')).token;
  t.same((await get(admin)).json(), { who: 'root@example.com' });
  const refused = await get(operator);
  t.same([refused.statusCode, refused.json()], [403, { code: 'FORBIDDEN', message: 'Forbidden: this needs an administrator account' }]);
  t.equal((await get()).statusCode, 401);
  t.equal((await get('fcs_short')).statusCode, 401);
});

t.test('the throttle\'s memory stays bounded: quiet entries go first, then the longest quiet', async (t) => {
  let now = 0;
  const events = new InProcessThrottleEvents({ retentionMs: 1000, maxKeys: 100 });
  const throttle = new SignInThrottle(events, { maxFailures: 2, windowMs: 1000, now: () => now });
  await throttle.tryBegin(['address:kept']);
  await throttle.tryBegin(['address:kept']);
  now = 2000;  // the two failures above left the window
  for (let i = 0; i < 150; i++) await throttle.tryBegin([`account:${i}@example.com`]);
  t.ok(events.size <= 100, `at most maxKeys entries (${events.size})`);
  t.equal(await throttle.retryAfterSeconds(['account:149@example.com']), 0, 'one failure is not a lock');
  await throttle.tryBegin(['account:149@example.com']);
  t.equal(await throttle.retryAfterSeconds(['account:149@example.com']), 1, 'the latest entries are kept');
});

t.test('expired sessions are purged from the store', async (t) => {
  const c = await cloud(t);
  await c.register('ann@example.com');
  const first = await c.signIn('ann@example.com');
  c.clock.ms += 31 * 60_000;
  const second = await c.signIn('ann@example.com');  // sweeps: the first session has been idle 31 minutes
  t.notOk(c.store.sessions.get(hashSessionToken(first)), 'the idle session is gone without being used again');
  t.ok(c.store.sessions.get(hashSessionToken(second)));
  t.equal(c.store.sessions.count(), 1);
});
