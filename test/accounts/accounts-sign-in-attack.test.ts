// A guesser attacking one operator's account from many addresses, on both storage backends: the guesser's
// addresses are throttled, the owner is not. The owner signs in from an address they used before however
// many failures there were, and from a fresh address while the failures stay under the account's much higher
// back-off; the owner's open session changes the password during the attack. The known addresses are kept in
// the store (LMDB, PostgreSQL), so they hold across a restart and, in PostgreSQL, across nodes.
import t from 'tap';
import type { Config } from '../../src/config/types';
import { BACKENDS, backendSkipReason, startBackendApp, type Backend, type BackendApp } from '../helpers/backends';

const OWNER = 'owner@example.com';
const PASSWORD = 'correct horse battery';
const OWNER_HOME = '203.0.113.9';

async function cloud(t: { teardown(fn: () => unknown): void }, backend: Backend, tune: (c: Config) => void = () => undefined): Promise<BackendApp> {
  const app = await startBackendApp(backend, { tune: (c) => { c.server.mode = 'cloud'; tune(c); } });
  t.teardown(() => app.close());
  return app;
}

function signIn(app: BackendApp, ip: string, password = PASSWORD) {
  return app.call({ method: 'POST', url: '/account/v1/sessions', key: null, payload: { email: OWNER, password }, remoteAddress: ip });
}

/** `count` wrong passwords for the owner's account from `ip`; the statuses answered. */
async function guess(app: BackendApp, ip: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await signIn(app, ip, `wrong guess number ${i}`)).statusCode);
  return statuses;
}

for (const backend of BACKENDS) {
  t.test(`an attack on one account throttles the attacker, not the owner (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const app = await cloud(t, backend);
    const registered = await app.call({ method: 'POST', url: '/account/v1/register', key: null, payload: { email: OWNER, password: PASSWORD }, remoteAddress: '198.51.100.4' });
    t.equal(registered.statusCode, 200, registered.body);
    const before = await signIn(app, OWNER_HOME);
    t.equal(before.statusCode, 200, 'the owner signs in from home: the address is remembered');
    const session = before.json().token as string;

    // The attacker: five guesses from each of four addresses (the per-pair limit), and then one more each.
    for (let a = 1; a <= 4; a++) {
      t.same(await guess(app, `192.0.2.${a}`, 5), [401, 401, 401, 401, 401], `attacker address ${a}: five wrong passwords`);
      const sixth = await signIn(app, `192.0.2.${a}`);
      t.same([sixth.statusCode, sixth.json().code], [429, 'AC_003'], `attacker address ${a} is throttled, the right password included`);
      t.match(sixth.headers['retry-after'], /^\d+$/, 'with Retry-After');
    }

    t.equal((await signIn(app, OWNER_HOME)).statusCode, 200, 'the owner signs in from home during the attack');
    t.equal((await signIn(app, '198.51.100.77')).statusCode, 200, 'and from a fresh address (the account\'s back-off is far higher)');

    const changed = await app.call({
      method: 'PUT', url: '/account/v1/password', key: null, remoteAddress: OWNER_HOME,
      headers: { authorization: `Bearer ${session}` }, payload: { currentPassword: PASSWORD, newPassword: 'a new and longer passphrase' },
    });
    t.same([changed.statusCode, changed.json()], [200, { changed: true }], 'the open session changes the password during the attack');
    t.equal((await signIn(app, OWNER_HOME, 'a new and longer passphrase')).statusCode, 200, 'the new password signs in');
  });

  t.test(`past the account's back-off, only addresses the owner used before sign in (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const app = await cloud(t, backend, (c) => { c.accounts.sign_in_account_max_failures = 12; });
    t.equal((await app.call({ method: 'POST', url: '/account/v1/register', key: null, payload: { email: OWNER, password: PASSWORD }, remoteAddress: '198.51.100.4' })).statusCode, 200);
    t.equal((await signIn(app, OWNER_HOME)).statusCode, 200, 'the owner signs in from home');
    const session = (await signIn(app, '198.51.100.5')).json().token as string;
    // Twelve failures from four addresses reach sign_in_account_max_failures (12).
    for (let a = 1; a <= 4; a++) t.same(await guess(app, `192.0.2.${a}`, 3), [401, 401, 401]);
    const fresh = await signIn(app, '192.0.2.200');
    t.same([fresh.statusCode, fresh.json().code], [429, 'AC_003'], 'a fresh address is refused by the account\'s back-off');
    t.equal((await signIn(app, OWNER_HOME)).statusCode, 200, 'the owner\'s known address is not');
    t.equal((await signIn(app, '198.51.100.5')).statusCode, 200, 'nor the other address the owner used');
    const wrongCurrent = await app.call({
      method: 'PUT', url: '/account/v1/password', key: null, headers: { authorization: `Bearer ${session}` },
      payload: { currentPassword: 'not the password', newPassword: 'a new and longer passphrase' },
    });
    t.same([wrongCurrent.statusCode, wrongCurrent.json().code], [401, 'AC_002'], 'the change still checks the current password');
    const changed = await app.call({
      method: 'PUT', url: '/account/v1/password', key: null, headers: { authorization: `Bearer ${session}` },
      payload: { currentPassword: PASSWORD, newPassword: 'a new and longer passphrase' },
    });
    t.equal(changed.statusCode, 200, 'and is not refused by the sign-in throttle');
  });

  t.test(`known addresses are kept in the store, at most known_addresses_per_account (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const app = await cloud(t, backend);
    const accountId = (await app.call({ method: 'POST', url: '/account/v1/register', key: null, payload: { email: OWNER, password: PASSWORD }, remoteAddress: '198.51.100.4' })).json().account.accountId as string;
    const keep = app.config.accounts.known_addresses_per_account;
    for (let i = 0; i <= keep; i++) t.equal((await signIn(app, `198.51.100.${100 + i}`)).statusCode, 200);
    t.notOk(await app.store.knownAddresses.isKnown(accountId, '198.51.100.100'), 'the least recent address went');
    t.ok(await app.store.knownAddresses.isKnown(accountId, '198.51.100.101'));
    t.ok(await app.store.knownAddresses.isKnown(accountId, `198.51.100.${100 + keep}`));
    t.notOk(await app.store.knownAddresses.isKnown(accountId, OWNER_HOME), 'an address never signed in from is not known');
  });
}
