// face-check migrate: an LMDB store's persons (templates of the installed model, images), accounts, API keys,
// response-signing key, activation codes (one unused, one used), a licence bound to a device with its usage,
// quota counts (today's among them), key usage and a session, moved to PostgreSQL and back. Proven by counts
// and checksums per kind and account on both sides; a second run copies nothing and still matches; on the
// other side everything behaves as before: a key made on LMDB authenticates and is held to the moved quota
// count, the unused code activates once, the used one is refused, the moved licence key checks in. A target
// changed behind the copy's back is reported; no licence key or activation code reaches the database in clear.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import t, { type Test } from 'tap';
import { main } from '../../../src/cli/main';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { ActivationCodes, activationCodeSha256, normaliseActivationCode } from '../../../src/licensing/cloud/activation-codes';
import { DeviceKeyService } from '../../../src/licensing/cloud/licence-device-keys';
import { personChecksums } from '../../../src/migrate/migrate-store';
import { lmdbAsyncStore } from '../../../src/storage/lmdb/async-store';
import { hashSessionToken, licenceKeySha256, type LicenceRecord } from '../../../src/storage/records';
import type { AsyncStore } from '../../../src/storage/interfaces';
import { allRowsByKey } from '../../../src/storage/postgres/keyset';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { openStore } from '../../../src/storage/lmdb/store';
import { testErrorCatalog } from '../../helpers/errors';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const MODEL = templateModelId();
const TODAY = new Date().toISOString().slice(0, 10);
const QUOTA_LIMIT = 5;

function randomTemplate(): Float32Array {
  const v = Float32Array.from({ length: templateSize() }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const codeSha = (code: string) => activationCodeSha256(normaliseActivationCode(code)!);

/** A licence record without its sealed key (sealed under each store's own data key) and with instants in one form. */
function comparable(l: LicenceRecord | undefined) {
  if (!l) return undefined;
  const { sealedKey: _sealed, ...rest } = l;
  return { ...rest, created: new Date(l.created).toISOString(), updated: new Date(l.updated).toISOString() };
}

async function run(): Promise<void> {
  const { pg: pgServer, dir, keyFile: pgKey } = await postgresCluster(t);
  const url = await pgServer.createDatabase('moved');
  const ini = (name: string, storage: string[]) => {
    const file = path.join(dir, `${name}.ini`);
    fs.writeFileSync(file, ['[server]', 'mode = cloud', '[storage]', ...storage].join('\n'));
    return file;
  };
  const pgIni = (database: string, name: string) =>
    ini(name, ['path = ./node', 'backend = postgres', `postgres_url = ${database}`, `key_file = ${pgKey}`]);
  const lmdbIni = ini('lmdb', ['path = ./lmdb']);
  const toPg = pgIni(url, 'pg');
  const backIni = ini('back', ['path = ./back']);
  const openPg = (database = url) => openPostgresStore(postgresSettings(database), { keyFile: pgKey });

  // The source: two accounts' persons (one updated later), an operator account, two keys (one signing), two
  // activation codes of which one made the licence, the licence bound with a check-in's usage, quota counts of
  // today and an earlier day, key usage, a session.
  const lmdb = lmdbAsyncStore(await openStore(path.join(dir, 'lmdb')));
  for (let i = 0; i < 25; i++) {
    const accountId = i % 3 ? 'acme' : 'default';
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    await lmdb.persons.create(accountId, `p${i}`, { modelId: MODEL, template: randomTemplate(), referenceImage: crypto.randomBytes(500 + i) }, at);
  }
  await lmdb.persons.replace('acme', 'p1', { modelId: MODEL, template: randomTemplate(), referenceImage: Buffer.from('newer') }, '2026-02-01T00:00:00.000Z');
  const now = new Date();
  const nowIso = now.toISOString();
  await lmdb.accounts.create({ accountId: 'acme', email: 'ops@acme.test', passwordHash: 'scrypt$x', role: 'operator', plan: 'free', created: nowIso, updated: nowIso });
  const { key: plainKey, record: plainKeyRecord } = await lmdb.apiKeys.create('acme', 'match', 'plain', nowIso);
  const signer = await lmdb.serviceKeys.responseSigning();
  await lmdb.apiKeys.create('default', 'full', 'signed', nowIso, signer.publicKey);
  const codes = new ActivationCodes(lmdb.activationCodes);
  const unusedCode = (await codes.issue('free', 30, now)).code;
  const usedCode = (await codes.issue('free', 30, now)).code;
  const created = await lmdb.licences.create({ accountId: 'acme', label: 'door', grants: ['identify', 'verify'], limits: { maxPersons: 100 }, expires: null },
    { now, maxLicences: 1, activationCode: { sha256: codeSha(usedCode), plan: 'free' } });
  if (created.outcome !== 'created') throw new Error(`licence not created: ${created.outcome}`);
  const licenceKey = created.licenceKey;
  const checkedIn = await lmdb.licences.checkIn(licenceKeySha256(licenceKey), (current) => ({
    accept: { ...current, device: { fingerprint: 'f'.repeat(64), boundAt: nowIso }, lastCheck: { at: nowIso, address: '10.0.0.7', version: '1.0.0', persons: 3 } },
  }), [{ day: '2026-01-02', operation: 'identify', requests: 40 }, { day: TODAY, operation: 'verify', requests: 2 }],
  { fingerprint: 'f'.repeat(64), series: 'series0123456789ab', number: 7 });
  if (checkedIn.outcome !== 'written') throw new Error(`check-in not written: ${checkedIn.outcome}`);
  // A device API key on the licence line: it moves with its licence, as its hash.
  const deviceKey = (await new DeviceKeyService({
    store: lmdb, errors: testErrorCatalog(), now: () => now, licences: { record: async () => (await lmdb.licences.get(created.record.licenceId))! },
  }).create({ anyAccount: true }, created.record.licenceId, { role: 'match', label: 'gate app' })).key;
  // And a licence stored as before device keys existed (no such field): the same on both sides once moved.
  const spare = await lmdb.licences.create({ accountId: 'acme', label: 'spare', grants: [], limits: { maxPersons: null }, expires: null }, { now, maxLicences: 0 });
  if (spare.outcome !== 'created') throw new Error(`licence not created: ${spare.outcome}`);
  for (let i = 0; i < QUOTA_LIMIT - 1; i++) await lmdb.quota.tryConsume('acme', TODAY, QUOTA_LIMIT);
  await lmdb.quota.tryConsume('acme', '2026-01-02', QUOTA_LIMIT);
  for (let i = 0; i < 3; i++) lmdb.keyUsage.record(plainKeyRecord.keyId, now);
  await lmdb.keyUsage.flush();
  await lmdb.sessions.create(hashSessionToken('fcs_session'), { accountId: 'acme', created: nowIso, lastSeen: nowIso, expires: new Date(now.getTime() + 3_600_000).toISOString() });
  const expected = await personChecksums(lmdb);
  const sourceLicence = await lmdb.licences.get(created.record.licenceId);
  await lmdb.close();

  await t.test('LMDB to PostgreSQL: everything copied, counts and checksums match', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', toPg], c.io), 0, c.err.join('\n'));
    const out = c.out.join('\n');
    t.match(out, /persons: 25 copied, 0 already there, 0 failed/);
    t.match(out, /API keys: 2 copied/);
    t.match(out, /activation codes: 2 copied, 0 already there, 0 failed/);
    t.match(out, /licences: 2 copied, 0 already there, 0 failed/);
    t.match(out, /licence usage: 2 copied/);
    t.match(out, /licence usage reports: 1 copied/);
    t.match(out, /quota counters: 2 copied/);
    t.match(out, /key usage: 1 copied/);
    t.match(out, /sessions: 1 not moved \(operators sign in again/);
    t.match(out, /migrate: licences: copying/, 'progress names each kind');
    t.match(out, /migrate: persons: 25 of 25 \(100 %\)/, 'and counts the persons copied of all');
    t.match(out, /account acme: match \(accounts 1, API keys 1, licences 2, licence usage 2, licence usage reports 1, quota counters 2, key usage 1, persons 16\)/);
    t.match(out, /store-wide: match \(activation codes 2\)/);
    t.match(out, /migrate: complete/);
    const target = await openPg();
    t.teardown(() => target.close());
    t.same(await personChecksums(target), expected, 'per-account counts and checksums equal the source\'s');
    t.equal((await target.apiKeys.lookup(plainKey))?.accountId, 'acme', 'a key made on LMDB authenticates on PostgreSQL');
    t.equal((await target.serviceKeys.responseSigning()).publicKey, signer.publicKey, 'the same response-signing key');
    t.equal((await target.persons.meta('acme', 'p1'))?.updated, '2026-02-01T00:00:00.000Z', 'updated kept');
    t.equal((await target.accounts.byEmail('ops@acme.test'))?.plan, 'free');
    let blocks = 0;
    for await (const b of target.persons.templateBlocks(MODEL)) blocks += b.ids.length;
    t.equal(blocks, 25, 'every template is of the model and in the gallery rebuild');
    const moved = await target.licences.byKeySha256(licenceKeySha256(licenceKey));
    t.same(comparable(moved), comparable(sourceLicence), 'the licence as stored: grants, limits, device binding, last check, device keys');
    t.equal(moved?.deviceKeys?.length, 1, 'its device key moved');
    t.equal(await target.licences.openKey(moved!), licenceKey, 'its key, sealed again, opens with the cluster\'s data key');
    t.same(await target.licenceUsage.range(moved!.licenceId, '2026-01-01', TODAY),
      [{ day: '2026-01-02', operation: 'identify', requests: 40 }, { day: TODAY, operation: 'verify', requests: 2 }]);
    t.same(await target.licenceUsage.reportEntries(), [{ licenceId: moved!.licenceId, fingerprint: 'f'.repeat(64), series: 'series0123456789ab', number: 7 }],
      'the last usage report number: the device resending report 7 to the moved store is not added twice');
    t.equal(await target.quota.used('acme', TODAY), QUOTA_LIMIT - 1, 'today\'s quota count carried over');
    t.same((await allRowsByKey(target.pool, 'quota', 'account_id, day, used', ['account_id', 'day'], 1)).map((r) => `${r.day} ${r.used}`),
      ['2026-01-02 1', `${TODAY} ${QUOTA_LIMIT - 1}`], 'read a page of one row at a time, every row comes once, in key order');
    t.same(await target.keyUsage.range(plainKeyRecord.keyId, TODAY, TODAY), [{ day: TODAY, requests: 3 }]);
    t.equal(await target.sessions.count(), 0, 'sessions are not moved');
    const { rows: tables } = await target.pool.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'");
    let text = '';
    for (const { name } of tables) text += (await target.pool.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`)).rows.map((r) => r.row).join('\n');
    t.ok(text.includes(moved!.keySha256), 'the search finds what is stored (the key hash)');
    for (const secret of [licenceKey, normaliseActivationCode(unusedCode)!, normaliseActivationCode(usedCode)!, plainKey, deviceKey]) {
      t.notOk(text.includes(secret) || text.includes(Buffer.from(secret).toString('hex')), 'no licence key, activation code, API key or device key in clear');
    }
  });

  await t.test('a second run copies nothing and still matches', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', toPg], c.io), 0, c.err.join('\n'));
    const out = c.out.join('\n');
    t.match(out, /persons: 0 copied, 25 already there/);
    t.match(out, /API keys: 0 copied, 2 already there/);
    for (const kind of ['accounts', 'activation codes', 'licences', 'licence usage', 'licence usage reports', 'quota counters', 'key usage']) {
      t.match(out, new RegExp(`${kind}: 0 copied, [1-9]\\d* already there, 0 failed`), `${kind}: nothing copied`);
    }
    t.match(out, /response-signing key: present/);
    t.match(out, /migrate: complete/);
  });

  await t.test('PostgreSQL back to a new LMDB store: the same checksums, the same licence', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', toPg, '--to', backIni], c.io), 0, c.err.join('\n'));
    t.match(c.out.join('\n'), /licences: 2 copied/);
    const back = lmdbAsyncStore(await openStore(path.join(dir, 'back')));
    t.teardown(() => back.close());
    t.same(await personChecksums(back), expected);
    t.equal((await back.apiKeys.lookup(plainKey))?.keyId, plainKeyRecord.keyId);
    const moved = await back.licences.byKeySha256(licenceKeySha256(licenceKey));
    t.same(comparable(moved), comparable(sourceLicence));
    t.equal(await back.licences.openKey(moved!), licenceKey);
    t.equal(await back.quota.used('acme', TODAY), QUOTA_LIMIT - 1);
  });

  /** What a moved store must do with what it was given. */
  const behaves = async (t: Test, store: AsyncStore) => {
    const accountId = (await store.apiKeys.lookup(plainKey))?.accountId;
    t.equal(accountId, 'acme', 'the key authenticates');
    t.ok(await store.quota.tryConsume(accountId!, TODAY, QUOTA_LIMIT), 'the last request of today\'s quota is admitted');
    t.notOk(await store.quota.tryConsume(accountId!, TODAY, QUOTA_LIMIT), 'the next one is refused: the quota was not reset');
    const licence = { accountId: 'acme', label: 'second', grants: ['identify' as const], limits: { maxPersons: null }, expires: null };
    const refused = await store.licences.create(licence, { now: new Date(), maxLicences: 0, activationCode: { sha256: codeSha(usedCode), plan: 'free' } });
    t.match(refused, { outcome: 'code-refused', check: { outcome: 'used' } }, 'the used code stays used');
    const activated = await store.licences.create(licence, { now: new Date(), maxLicences: 0, activationCode: { sha256: codeSha(unusedCode), plan: 'free' } });
    t.equal(activated.outcome, 'created', 'the unused code activates');
    const again = await store.licences.create(licence, { now: new Date(), maxLicences: 0, activationCode: { sha256: codeSha(unusedCode), plan: 'free' } });
    t.match(again, { outcome: 'code-refused', check: { outcome: 'used' } }, 'once');
    const checkIn = await store.licences.checkIn(licenceKeySha256(licenceKey), (current) => ({ accept: current }),
      [{ day: TODAY, operation: 'verify', requests: 1 }]);
    t.equal(checkIn.outcome, 'written', 'the device\'s licence key checks in');
    t.same((await store.licenceUsage.day(sourceLicence!.licenceId, TODAY)).verify, 3, 'its usage adds to the moved count');
  };

  await t.test('on PostgreSQL the moved data behaves as it did', async (t) => {
    const target = await openPg();
    t.teardown(() => target.close());
    await behaves(t, target);
  });

  await t.test('on the LMDB store moved back the data behaves as it did', async (t) => {
    const back = lmdbAsyncStore(await openStore(path.join(dir, 'back')));
    t.teardown(() => back.close());
    await behaves(t, back);
  });

  await t.test('a target changed behind the copy is reported, not hidden', async (t) => {
    const tamperedUrl = await pgServer.createDatabase('tampered');
    const tamperedIni = pgIni(tamperedUrl, 'tampered');
    const first = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', tamperedIni], first.io), 0, first.err.join('\n'));
    const client = new Client({ connectionString: tamperedUrl });
    await client.connect();
    try {
      // A used code made usable again, a licence's grants widened, today's quota count raised.
      await client.query('UPDATE activation_codes SET used_at = NULL, used_by_account = NULL, used_for_licence = NULL WHERE used_at IS NOT NULL');
      await client.query(`UPDATE licences SET grants = '["identify", "verify", "create"]'`);
      await client.query('UPDATE quota SET used = used + 3 WHERE day = $1', [TODAY]);
    } finally {
      await client.end();
    }
    const target = await openPg(tamperedUrl);
    const removed = await target.persons.remove('acme', 'p2');
    await target.persons.create('acme', 'p2', { modelId: MODEL, template: randomTemplate(), referenceImage: Buffer.from('other') }, removed!.created);
    await target.close();
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', tamperedIni], c.io), 1);
    const out = c.out.join('\n');
    t.match(out, /account acme: DIFFER in licences \(source 2, target 2, other content\), quota counters \(source 2, target 2, other content\), persons \(source 16, target 16, other content\)/);
    t.match(out, /store-wide: DIFFER in activation codes/);
    t.match(out, /account default: match/, 'what was not changed still matches');
    t.match(out, /INCOMPLETE/);
  });
}
