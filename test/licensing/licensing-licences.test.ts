// The licence section's rules (LicenceService on a real store): activation codes and their refusals, the
// plan's licence count, grants, revoke, release, usage, one account never reaching another's licences, the
// licence key kept only hashed and sealed; and the account API's licence routes over app.inject.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import type { Plan } from '../../src/domain/accounts';
import { ApiError } from '../../src/errors';
import { ActivationCodes } from '../../src/licensing/cloud/activation-codes';
import { publicKeySha256 } from '../../src/licensing/licence-document';
import { LicenceServer } from '../../src/licensing/cloud/licence-server';
import { LicenceService } from '../../src/licensing/cloud/licences';
import { openStore, type Store } from '../../src/storage/lmdb/store';
import { startTestApp, tempDir } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { writeTinyTarball } from '../helpers/tiny-package';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';

const PACKAGE_SHA = crypto.createHash('sha256').update('the package').digest('hex');
const SERVER_URL = 'https://cloud.example.com';

interface Fixture {
  store: Store;
  config: Config;
  licences: LicenceService;
  codes: ActivationCodes;
  server: LicenceServer;
  clock: { now: Date };
  dir: string;
  addAccount(accountId: string, plan: Plan): Promise<void>;
  reopen(): Promise<void>;
}

async function fixture(t: Test, tune?: (c: Config) => void): Promise<Fixture> {
  const dir = tempDir();
  const config = defaultConfig(dir);
  config.storage.path = path.join(dir, 'db');
  tune?.(config);
  const clock = { now: new Date('2030-03-04T10:00:00.000Z') };
  const errors = testErrorCatalog();
  const f = {} as Fixture;
  const build = async () => {
    f.store = await openStore(config.storage.path);
    const now = () => clock.now;
    f.licences = new LicenceService({
      config, store: lmdbAsyncStore(f.store), errors, now, devicePackage: async () => ({ sha256: PACKAGE_SHA, nodeMinimum: '20.9.0' }), serverUrl: () => SERVER_URL,
    });
    f.codes = new ActivationCodes(f.store.activationCodes);
    f.server = new LicenceServer({ config, store: lmdbAsyncStore(f.store), errors, now });
  };
  await build();
  Object.assign(f, {
    config, clock, dir,
    addAccount: async (accountId: string, plan: Plan) => {
      const at = clock.now.toISOString();
      t.equal(await f.store.accounts.create({
        accountId, email: `${accountId}@example.com`, passwordHash: 'not-used', role: 'operator', plan, created: at, updated: at,
      }), 'created');
    },
    reopen: async () => {
      await f.store.close();
      await build();
    },
  });
  t.teardown(async () => {
    await f.store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return f;
}

/** Resolves with the ApiError the promise rejected with (fails the test when it resolves). */
async function refusal(t: Test, promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  t.fail('expected a refusal');
  throw new Error('no refusal');
}

const fingerprint = (n: number) => crypto.createHash('sha256').update(`device ${n}`).digest('hex');
const checkBody = (licenceKey: string, device: number) => ({
  licenceKey, fingerprint: fingerprint(device), nonce: crypto.randomBytes(16).toString('base64url'), version: '1.0.0', persons: 0, usage: [],
});

t.test('the free plan needs an activation code; each refusal says why', async (t) => {
  const f = await fixture(t, (c) => { c.plans.free_max_licences = 0; });
  await f.addAccount('acme', 'free');
  await f.addAccount('bigco', 'paid');

  const missing = await refusal(t, f.licences.create('acme', { grants: ['identify'] }));
  t.equal(missing.code, 'LC_001');
  t.equal(missing.publicMessage, 'An activation code is required: the free plan needs an activation code to add a licence (ask your provider for one)');

  const wrong = await refusal(t, f.licences.create('acme', { grants: ['identify'], activationCode: '0000-0000-0000-0000' }));
  t.equal(wrong.code, 'LC_002');
  t.equal(wrong.publicMessage, 'Activation code refused: the code is not recognised (check it for typing errors)');
  const malformed = await refusal(t, f.licences.create('acme', { grants: ['identify'], activationCode: 'not a code' }));
  t.equal(malformed.publicMessage, wrong.publicMessage, 'a text that cannot be a code is refused the same way');

  const { code } = await f.codes.issue('free', 30, f.clock.now);
  t.match(code, /^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/, 'four groups of Crockford base32');
  // Typed in lower case, without dashes, O for 0 and l for 1: the same code.
  const typed = code.toLowerCase().replace(/-/g, '').replace(/0/g, 'O').replace(/1/g, 'l');
  const created = await f.licences.create('acme', { label: 'gate 1', grants: ['verify', 'identify'], activationCode: typed });
  t.same(created.grants, ['identify', 'verify'], 'grants in the table\'s order');
  t.equal(created.status, 'active');

  f.clock.now = new Date('2030-03-09T08:00:00.000Z');
  const used = await refusal(t, f.licences.create('acme', { grants: [], activationCode: code }));
  t.equal(used.publicMessage, 'Activation code refused: the code was already used on 2030-03-04');

  const old = await f.codes.issue('free', 2, new Date('2030-03-01T00:00:00.000Z'));
  const expired = await refusal(t, f.licences.create('acme', { grants: [], activationCode: old.code }));
  t.equal(expired.publicMessage, 'Activation code refused: the code expired on 2030-03-03');

  const paidCode = await f.codes.issue('paid', 30, f.clock.now);
  const otherPlan = await refusal(t, f.licences.create('acme', { grants: [], activationCode: paidCode.code }));
  t.equal(otherPlan.publicMessage, 'Activation code refused: the code is for the paid plan while this account is on the free plan');

  // The paid plan needs no code by default, but one given is still checked and used up.
  t.equal((await f.licences.create('bigco', { grants: ['compare'] })).status, 'active');
  const paidWrong = await refusal(t, f.licences.create('bigco', { grants: [], activationCode: old.code }));
  t.equal(paidWrong.code, 'LC_002');
  await f.licences.create('bigco', { grants: [], activationCode: paidCode.code });
  const record = f.store.activationCodes.list().find((c) => c.plan === 'paid')!;
  t.equal(record.used?.accountId, 'bigco', 'the code records who used it');
  t.equal((await f.licences.list({ accountId: 'acme' })).length, 1, 'refused creations added nothing');
});

t.test('two concurrent creations with one code: exactly one succeeds', async (t) => {
  const f = await fixture(t, (c) => { c.plans.free_max_licences = 0; });
  await f.addAccount('acme', 'free');
  await f.addAccount('globex', 'free');
  for (let round = 0; round < 5; round++) {
    const { code } = await f.codes.issue('free', 30, f.clock.now);
    const results = await Promise.allSettled([
      f.licences.create('acme', { grants: ['identify'], activationCode: code }),
      f.licences.create('globex', { grants: ['identify'], activationCode: code }),
      f.licences.create('acme', { grants: ['identify'], activationCode: code }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    t.equal(won.length, 1, `round ${round}: one creation`);
    t.same(lost.map((r) => (r.reason as ApiError).code), ['LC_002', 'LC_002'], `round ${round}: the others refused`);
    t.match((lost[0].reason as ApiError).publicMessage, /already used on/);
  }
  const all = [...(await f.licences.list({ accountId: 'acme' })), ...(await f.licences.list({ accountId: 'globex' }))];
  t.equal(all.length, 5, 'five codes, five licences');
});

t.test('the plan\'s licence count: revoked ones do not count, the administrator is not held to it', async (t) => {
  const f = await fixture(t, (c) => { c.plans.free_max_licences = 1; });
  await f.addAccount('acme', 'free');
  const first = await f.licences.create('acme', { grants: ['identify'], activationCode: (await f.codes.issue('free', 30, f.clock.now)).code });
  const { code } = await f.codes.issue('free', 30, f.clock.now);
  const over = await refusal(t, f.licences.create('acme', { grants: ['identify'], activationCode: code }));
  t.equal(over.code, 'LC_003');
  t.equal(over.publicMessage, 'The plan\'s licence limit is reached: the free plan allows 1 licence (not revoked) and this account holds 1; revoke one, or move to the paid plan');
  t.equal(f.store.activationCodes.list().filter((c) => c.used === null).length, 1, 'the refused creation did not use the code');

  const byAdmin = await f.licences.create('acme', { grants: ['verify'] }, { byAdministrator: true });
  t.equal(byAdmin.status, 'active', 'the CLI needs no code and ignores the count');

  await f.licences.revoke({ accountId: 'acme' }, first.licenceId);
  const stillOver = await refusal(t, f.licences.create('acme', { grants: ['identify'], activationCode: code }));
  t.equal(stillOver.code, 'LC_003', 'the administrator\'s licence counts too');
  await f.licences.revoke({ anyAccount: true }, byAdmin.licenceId);
  t.equal((await f.licences.create('acme', { grants: ['identify'], activationCode: code })).status, 'active', 'room again once revoked');
});

t.test('grants, limits, expiry and label change; revoking is final', async (t) => {
  const f = await fixture(t);
  await f.addAccount('acme', 'paid');
  const scope = { accountId: 'acme' };
  const licence = await f.licences.create('acme', { label: 'kiosk', grants: 'identify' });
  t.same(licence.limits, { maxPersons: null });
  t.equal(licence.expires, null);

  f.clock.now = new Date('2030-03-05T00:00:00.000Z');
  const changed = await f.licences.update(scope, licence.licenceId, {
    grants: ['compare', 'live-face', 'identify'], maxPersons: 500, expires: '2031-01-01', label: ' kiosk 2 ',
  });
  t.same(changed.grants, ['live-face', 'identify', 'compare']);
  t.same(changed.limits, { maxPersons: 500 });
  t.equal(changed.expires, '2031-01-01T00:00:00.000Z');
  t.equal(changed.label, 'kiosk 2');
  t.equal(changed.updated, '2030-03-05T00:00:00.000Z');
  t.equal(changed.created, licence.created);
  t.same((await f.licences.get(scope, licence.licenceId)).grants, changed.grants, 'stored');

  const unknown = await refusal(t, f.licences.update(scope, licence.licenceId, { grants: ['identify', 'fly'] }));
  t.equal(unknown.code, 'R_003');
  t.match(unknown.publicMessage, /^Fields validation exception: grants: unknown grant "fly"/);
  const past = await refusal(t, f.licences.update(scope, licence.licenceId, { expires: '2029-12-31T00:00:00Z' }));
  t.match(past.publicMessage, /expires: 2029-12-31T00:00:00Z is not in the future/);
  const negative = await refusal(t, f.licences.update(scope, licence.licenceId, { maxPersons: -1 }));
  t.equal(negative.code, 'R_003');
  t.same((await f.licences.get(scope, licence.licenceId)).limits, { maxPersons: 500 }, 'refused changes change nothing');
  t.same((await f.licences.update(scope, licence.licenceId, { maxPersons: null, expires: null })).limits, { maxPersons: null });

  const revoked = await f.licences.revoke(scope, licence.licenceId);
  t.equal(revoked.status, 'revoked');
  f.clock.now = new Date('2030-03-06T00:00:00.000Z');
  t.equal((await f.licences.revoke(scope, licence.licenceId)).updated, revoked.updated, 'revoking again changes nothing');
  const after = await refusal(t, f.licences.update(scope, licence.licenceId, { grants: ['identify'] }));
  t.equal(after.code, 'LC_006');
  t.equal(after.publicMessage, `Licence revoked: licence ${licence.licenceId} was revoked on 2030-03-05; revoking is final, add a new licence instead`);
});

t.test('release clears the device binding so another device can bind', async (t) => {
  const f = await fixture(t);
  await f.addAccount('acme', 'paid');
  const licence = await f.licences.create('acme', { grants: ['identify'] });
  await f.server.check(checkBody(licence.licenceKey, 1), '10.0.0.1');
  const bound = await f.licences.get({ accountId: 'acme' }, licence.licenceId);
  t.equal(bound.device?.fingerprint, fingerprint(1));
  t.same(bound.lastCheck, { at: f.clock.now.toISOString(), address: '10.0.0.1', version: '1.0.0', persons: 0 });
  t.equal((await refusal(t, f.server.check(checkBody(licence.licenceKey, 2), '10.0.0.2'))).code, 'LC_008');

  const released = await f.licences.release({ accountId: 'acme' }, licence.licenceId);
  t.equal(released.device, null);
  await f.server.check(checkBody(licence.licenceKey, 2), '10.0.0.2');
  t.equal((await f.licences.get({ accountId: 'acme' }, licence.licenceId)).device?.fingerprint, fingerprint(2), 'the new board bound');
});

t.test('an account never reaches another account\'s licence: "not found", like a missing one', async (t) => {
  const f = await fixture(t);
  await f.addAccount('acme', 'paid');
  await f.addAccount('globex', 'paid');
  const theirs = await f.licences.create('acme', { grants: ['identify'] });
  const scope = { accountId: 'globex' };
  const id = theirs.licenceId;
  const missingId = 'lic_0000000000000000';
  for (const [what, call] of [
    ['get', (l: string) => f.licences.get(scope, l)],
    ['update', (l: string) => f.licences.update(scope, l, { grants: ['compare'] })],
    ['revoke', (l: string) => f.licences.revoke(scope, l)],
    ['release', (l: string) => f.licences.release(scope, l)],
    ['usage', async (l: string) => f.licences.usage(scope, l)],
  ] as const) {
    const other = await refusal(t, call(id));
    const missing = await refusal(t, call(missingId));
    t.equal(other.code, 'LC_004', what);
    t.equal(other.statusCode, 404, what);
    t.equal(other.publicMessage, missing.publicMessage.replace(missingId, id), `${what}: the same answer as a missing id`);
  }
  t.same(await f.licences.list(scope), [], 'not listed either');
  const untouched = await f.licences.get({ accountId: 'acme' }, id);
  t.same([untouched.status, untouched.grants, untouched.updated], ['active', ['identify'], theirs.updated], 'nothing changed');
});

t.test('the licence key is stored only as its hash and a sealed copy', async (t) => {
  const f = await fixture(t);
  await f.addAccount('acme', 'paid');
  const licence = await f.licences.create('acme', { grants: ['identify'] });
  t.match(licence.licenceKey, /^fcl_[A-Za-z0-9_-]{32}$/);
  const sha = crypto.createHash('sha256').update(licence.licenceKey).digest('hex');
  t.equal(f.store.licences.byKeySha256(sha)?.licenceId, licence.licenceId, 'found by its hash');

  const service = await f.store.serviceKeys.responseSigning();
  if (licence.installCommand === null) throw new Error('no installation command');
  t.ok(licence.installCommand.includes(licence.licenceKey), 'the licence line shows the key in its command');
  t.ok(licence.installCommand.includes(PACKAGE_SHA), 'the command names the package hash');
  t.ok(licence.installCommand.includes(publicKeySha256(service.publicKey)), 'and pins the service key');
  t.ok(licence.installCommand.includes(`${SERVER_URL}/licence/v1/package`));

  await f.store.close();
  const data = fs.readFileSync(path.join(f.config.storage.path, 'data.mdb'));
  t.equal(data.indexOf(licence.licenceKey), -1, 'the key text is nowhere in the data file');
  t.equal(data.indexOf(licence.licenceKey.slice(4)), -1, 'nor its random part');
  t.not(data.indexOf(sha), -1, 'its hash is (the lookup index)');
  await f.reopen();
  t.equal((await f.licences.get({ accountId: 'acme' }, licence.licenceId)).licenceKey, licence.licenceKey, 'the sealed copy opens after a restart');
});

t.test('usage: reported counts per UTC day and operation, every day of the range', async (t) => {
  const f = await fixture(t);
  await f.addAccount('acme', 'paid');
  const licence = await f.licences.create('acme', { grants: ['identify', 'verify'] });
  await f.store.licenceUsage.add(licence.licenceId, [
    { day: '2030-03-02', operation: 'identify', requests: 4 },
    { day: '2030-03-04', operation: 'verify', requests: 2 },
    { day: '2030-03-04', operation: 'identify', requests: 1 },
    { day: '2030-02-20', operation: 'identify', requests: 9 },
  ]);
  await f.store.licenceUsage.add(licence.licenceId, [{ day: '2030-03-04', operation: 'identify', requests: 5 }]);
  const usage = await f.licences.usage({ accountId: 'acme' }, licence.licenceId, 3);
  t.same(usage, {
    licenceId: licence.licenceId, from: '2030-03-02', to: '2030-03-04',
    days: [
      { day: '2030-03-02', requests: { identify: 4 }, total: 4 },
      { day: '2030-03-03', requests: {}, total: 0 },
      { day: '2030-03-04', requests: { identify: 6, verify: 2 }, total: 8 },
    ],
  });
  t.same((await f.licences.get({ accountId: 'acme' }, licence.licenceId)).usageToday, { identify: 6, verify: 2 });
  t.equal((await f.licences.usage({ accountId: 'acme' }, licence.licenceId, 30)).days.length, 30);
  t.equal((await refusal(t, (async () => f.licences.usage({ accountId: 'acme' }, licence.licenceId, 0))())).code, 'R_003');
});

t.test('over HTTP: the signed-in operator\'s licence section', async (t) => {
  const a = await startTestApp({
    tune: (c) => {
      c.server.mode = 'cloud';
      c.licensing.public_url = SERVER_URL;
      c.licensing.package_file = writeTinyTarball(path.dirname(c.storage.path));
    },
  });
  t.teardown(() => a.close());
  const signIn = async (email: string) => {
    const password = 'a long enough password';
    t.equal((await a.call({ method: 'POST', url: '/account/v1/register', key: null, payload: { email, password } })).statusCode, 200);
    const session = await a.call({ method: 'POST', url: '/account/v1/sessions', key: null, payload: { email, password } });
    return (method: string, url: string, payload?: object) => a.call({
      method: method as 'GET', url, key: null, payload, headers: { authorization: `Bearer ${session.json().token}` },
    });
  };
  const ops = await signIn('ops@acme.example');
  const rival = await signIn('ops@globex.example');
  const L = '/account/v1/licences';

  const anonymous = await a.call({ method: 'GET', url: L, key: null });
  t.same([anonymous.statusCode, anonymous.json().code], [401, 'UNAUTHORIZED'], 'a session is needed');

  const noCode = await ops('POST', L, { label: 'gate', grants: ['identify'] });
  t.same(noCode.json(), { code: 'LC_001', message: 'An activation code is required: the free plan needs an activation code to add a licence (ask your provider for one)' });
  const badGrant = await ops('POST', L, { label: 'gate', grants: ['identify', 'fly'] });
  t.same([badGrant.statusCode, badGrant.json().code], [400, 'R_003']);
  t.match(badGrant.json().message, /^Fields validation exception: body\/grants\/1 /, 'says which field');

  const { code } = await new ActivationCodes(a.store.activationCodes).issue('free', 30, new Date());
  const added = await ops('POST', L, { label: 'gate', grants: ['verify', 'identify'], maxPersons: 100, activationCode: code });
  t.equal(added.statusCode, 200);
  t.equal(added.headers['cache-control'], 'no-store', 'the line carries the key: never cached');
  const line = added.json();
  t.same(Object.keys(line).sort(), ['created', 'device', 'expires', 'grants', 'installCommand', 'label', 'lastCheck', 'licenceId',
    'licenceKey', 'limits', 'status', 'updated', 'usageToday']);
  t.same([line.grants, line.limits, line.device, line.lastCheck, line.usageToday], [['identify', 'verify'], { maxPersons: 100 }, null, null, {}]);
  t.ok(line.installCommand.includes(`-H "Licence-Key: ${line.licenceKey}"`) && line.installCommand.includes(SERVER_URL));
  const id = line.licenceId;

  const second = await ops('POST', L, { label: 'two', grants: [], activationCode: (await new ActivationCodes(a.store.activationCodes).issue('free', 30, new Date())).code });
  t.same([second.statusCode, second.json().code], [400, 'LC_003'], 'the free plan holds one licence');

  t.same((await ops('GET', L)).json().licences.map((l: { licenceId: string }) => l.licenceId), [id]);
  t.same((await ops('PATCH', `${L}/${id}`, { grants: ['compare'] })).json().grants, ['compare'], 'grants changed');
  t.same((await ops('GET', `${L}/${id}`)).json().grants, ['compare']);
  t.equal((await ops('PATCH', `${L}/${id}`, {})).json().code, 'R_003', 'an empty change is refused');
  const days = (await ops('GET', `${L}/${id}/usage?days=7`)).json();
  t.equal(days.days.length, 7);
  t.equal((await ops('GET', `${L}/${id}/usage?days=0`)).json().code, 'R_003');

  // Another account: every route answers as for a licence that does not exist.
  const missing = 'lic_0123456789abcdef';
  for (const [method, suffix, payload] of [['GET', ''], ['PATCH', '', { grants: ['identify'] }], ['POST', '/revoke'], ['POST', '/release'], ['GET', '/usage']] as const) {
    const theirs = await rival(method, `${L}/${id}${suffix}`, payload);
    const none = await rival(method, `${L}/${missing}${suffix}`, payload);
    t.equal(theirs.statusCode, 404, `${method} ${suffix}`);
    t.same(theirs.json(), { code: 'LC_004', message: none.json().message.replace(missing, id) }, `${method} ${suffix}: as if missing`);
  }
  t.same((await rival('GET', L)).json().licences, []);
  t.same((await ops('GET', `${L}/${id}`)).json().grants, ['compare'], 'the rival changed nothing');

  const released = await ops('POST', `${L}/${id}/release`);
  t.equal(released.json().device, null);
  const revoked = await ops('POST', `${L}/${id}/revoke`);
  t.equal(revoked.json().status, 'revoked');
  const afterRevoke = await ops('PATCH', `${L}/${id}`, { label: 'again' });
  t.same([afterRevoke.statusCode, afterRevoke.json().code], [403, 'LC_006']);

  const doc = (await a.call({ method: 'GET', url: '/openapi.json', key: null })).json();
  t.same(doc.paths[L].post.tags, ['licence'], 'in the OpenAPI document');
  t.ok(doc.paths['/licence/v1/check'].post, 'with the check');
});
