// The PostgreSQL repositories give the LMDB repositories' answers: accounts (unique address, update in place),
// API keys (hash only, revoke, last use at most once a minute), sessions (touch, purge, end all others),
// activation codes and licences (limit, code verdicts, update, check-in with usage), licence and key usage,
// quota, shared settings. Records come back exactly as written, timestamps included.
import path from 'node:path';
import t from 'tap';
import { type AccountRecord, type ActivationCodeRecord, hashKey, type LicenceRecord } from '../../../src/storage/records';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const T0 = '2024-05-01T10:00:00.000Z';

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const store = await openPostgresStore(postgresSettings(pg.url, { poolSize: 4 }),
    { keyFile: path.join(dir, 'k'), keyUsageFlushMs: 50 });
  t.teardown(() => store.close());

  await t.test('accounts', async (t) => {
    const alice: AccountRecord = { accountId: 'acc_1', email: ' Alice@Example.com ', passwordHash: 'scrypt$x', role: 'operator',
      plan: 'free', created: T0, updated: T0 };
    t.equal(await store.accounts.create(alice), 'created');
    t.equal(await store.accounts.create({ ...alice, accountId: 'acc_2', email: 'alice@example.COM' }), 'email-taken');
    t.equal(await store.accounts.create({ ...alice, email: 'other@example.com' }), 'id-taken');
    t.same(await store.accounts.get('acc_1'), { ...alice, email: 'alice@example.com' });
    t.equal((await store.accounts.byEmail('ALICE@example.com'))?.accountId, 'acc_1');
    const updated = await store.accounts.update('acc_1', (a) => ({ ...a, plan: 'paid', email: 'ignored@x', updated: '2024-05-02T00:00:00.000Z' }));
    t.same(updated, { ...alice, email: 'alice@example.com', plan: 'paid', updated: '2024-05-02T00:00:00.000Z' }, 'address never changes');
    t.same(await store.accounts.get('acc_1'), updated);
    t.equal(await store.accounts.update('nobody', (a) => a), undefined);
    t.same((await store.accounts.list()).map((a) => a.accountId), ['acc_1']);
  });

  await t.test('API keys', async (t) => {
    t.equal(await store.apiKeys.isEmpty(), true);
    const { key, record } = await store.apiKeys.create('acc_1', 'full', 'ci', T0);
    const signed = await store.apiKeys.create('acc_1', 'match', 'signed', '2024-05-01T11:00:00.000Z', 'PEM');
    t.equal(await store.apiKeys.isEmpty(), false);
    t.same(await store.apiKeys.lookup(key), record);
    t.equal((await store.apiKeys.lookup(signed.key))?.signingPublicKey, 'PEM');
    t.equal(await store.apiKeys.lookup('fc_nope'), undefined);
    const { rows } = await store.pool.query('SELECT key_sha256 FROM api_keys ORDER BY created');
    t.same(rows.map((r) => r.key_sha256), [hashKey(key), hashKey(signed.key)], 'stored by hash only');
    await store.apiKeys.recordUse(key, new Date('2024-05-03T00:00:00.000Z'));
    await store.apiKeys.recordUse(key, new Date('2024-05-03T00:00:30.000Z'));
    t.equal((await store.apiKeys.lookup(key))?.lastUsed, '2024-05-03T00:00:00.000Z', 'a use within the minute is not written');
    await store.apiKeys.recordUse(key, new Date('2024-05-03T00:01:00.000Z'));
    t.equal((await store.apiKeys.lookup(key))?.lastUsed, '2024-05-03T00:01:00.000Z');
    t.equal(await store.apiKeys.revoke(record.keyId, '2024-05-04T00:00:00.000Z', 'someone-else'), false, 'another account\'s key');
    t.equal(await store.apiKeys.revoke(record.keyId, '2024-05-04T00:00:00.000Z', 'acc_1'), true);
    t.equal(await store.apiKeys.revoke(record.keyId, '2024-05-05T00:00:00.000Z'), true, 'revoking again is fine');
    t.equal((await store.apiKeys.lookup(key))?.revoked, '2024-05-04T00:00:00.000Z', 'the first revocation stays');
    t.same((await store.apiKeys.list()).map((k) => k.label), ['ci', 'signed']);
  });

  await t.test('sessions', async (t) => {
    const base = { accountId: 'acc_1', created: T0, lastSeen: T0, expires: '2024-05-08T10:00:00.000Z' };
    await store.sessions.create('h1', base);
    await store.sessions.create('h2', base);
    await store.sessions.create('h3', { ...base, accountId: 'acc_2' });
    t.same(await store.sessions.get('h1'), base);
    await store.sessions.touch('h1', new Date('2024-05-01T10:00:00.999Z'));
    t.equal((await store.sessions.get('h1'))?.lastSeen, T0, 'not within a second');
    await store.sessions.touch('h1', new Date('2024-05-01T10:01:00.000Z'));
    t.equal((await store.sessions.get('h1'))?.lastSeen, '2024-05-01T10:01:00.000Z');
    t.equal(await store.sessions.deleteAllOf('acc_1', 'h1'), 1, 'all others of the account');
    t.equal(await store.sessions.count(), 2);
    t.equal(await store.sessions.purgeExpired(new Date('2024-05-01T10:30:00.000Z'), 29.5 * 60_000), 1,
      'h3 idle for 30 minutes goes, h1 idle for 29 stays');
    t.equal(await store.sessions.delete('h1'), true);
    t.equal(await store.sessions.delete('h1'), false);
    t.equal(await store.sessions.count(), 0);
  });

  await t.test('activation codes and licences', async (t) => {
    const code: ActivationCodeRecord = { codeId: 'abcd1234', plan: 'free', created: T0, expires: '2099-01-01T00:00:00.000Z', used: null };
    t.equal(await store.activationCodes.add('sha-a', code), true);
    t.equal(await store.activationCodes.add('sha-a', code), false);
    await store.activationCodes.add('sha-old', { ...code, codeId: 'old', expires: '2000-01-01T00:00:00.000Z' });
    const now = new Date('2024-05-01T12:00:00.000Z');
    const fresh = { accountId: 'acc_1', label: 'gate', grants: ['identify' as const], limits: { maxPersons: 10 }, expires: null };
    const refuse = async (sha256: string, plan: 'free' | 'paid') => {
      const r = await store.licences.create(fresh, { now, maxLicences: 0, activationCode: { sha256, plan } });
      return r.outcome === 'code-refused' ? r.check.outcome : r.outcome;
    };
    t.equal(await refuse('sha-none', 'free'), 'unknown');
    t.equal(await refuse('sha-old', 'free'), 'expired');
    t.equal(await refuse('sha-a', 'paid'), 'other-plan');
    const made = await store.licences.create(fresh, { now, maxLicences: 2, activationCode: { sha256: 'sha-a', plan: 'free' } });
    if (made.outcome !== 'created') throw new Error(made.outcome);
    t.equal(await refuse('sha-a', 'free'), 'used');
    t.same((await store.activationCodes.list()).find((c) => c.codeId === 'abcd1234')?.used,
      { at: now.toISOString(), accountId: 'acc_1', licenceId: made.record.licenceId });
    t.same(await store.licences.get(made.record.licenceId), made.record, 'read back as written');
    t.same(await store.licences.byKeySha256(made.record.keySha256), made.record);
    t.equal(await store.licences.openKey(made.record), made.licenceKey);
    await store.licences.create(fresh, { now, maxLicences: 2 });
    t.same(await store.licences.create(fresh, { now, maxLicences: 2 }), { outcome: 'limit-reached', held: 2 });

    const revoke = await store.licences.update(made.record.licenceId, (l) => ({ accept: { ...l, status: 'revoked', revoked: now.toISOString(), licenceId: 'forged' } }));
    t.equal(revoke.outcome === 'written' && revoke.record.licenceId, made.record.licenceId, 'the id cannot be changed');
    t.same(await store.licences.update('lic_none', () => ({ refuse: 'x' })), { outcome: 'missing' });
    t.equal((await store.licences.create(fresh, { now, maxLicences: 2 })).outcome, 'created', 'a revoked licence no longer counts');

    const bound = await store.licences.checkIn(made.record.keySha256, (l): { accept: LicenceRecord } => ({
      accept: { ...l, device: { fingerprint: 'fp', boundAt: now.toISOString() }, lastCheck: { at: now.toISOString(), address: '10.0.0.1', version: '1', persons: 3 } },
    }), [{ day: '2024-05-01', operation: 'identify', requests: 5 }, { day: '2024-05-01', operation: 'identify', requests: 2 },
      { day: '2024-05-02', operation: 'verify', requests: 1 }, { day: '2024-05-02', operation: 'get', requests: 0 }]);
    t.equal(bound.outcome, 'written');
    t.same((await store.licences.get(made.record.licenceId))?.device, { fingerprint: 'fp', boundAt: now.toISOString() });
    const refused = await store.licences.checkIn(made.record.keySha256, () => ({ refuse: 'revoked' }), [{ day: '2024-05-03', operation: 'get', requests: 9 }]);
    t.same(refused, { outcome: 'refused', reason: 'revoked' });
    t.same(await store.licenceUsage.range(made.record.licenceId, '2024-05-01', '2024-05-31'),
      [{ day: '2024-05-01', operation: 'identify', requests: 7 }, { day: '2024-05-02', operation: 'verify', requests: 1 }],
      'summed, zero rows and refused check-ins not counted');
    await store.licenceUsage.add(made.record.licenceId, [{ day: '2024-05-02', operation: 'verify', requests: 4 }]);
    t.same(await store.licenceUsage.day(made.record.licenceId, '2024-05-02'), { verify: 5 });
    t.same((await store.licences.listByAccount('acc_1')).length, 3);
    t.same((await store.licences.list()).map((l) => l.licenceId), (await store.licences.listByAccount('acc_1')).map((l) => l.licenceId));
  });

  await t.test('key usage: counted in memory, written by the flush, read back with what is pending', async (t) => {
    const at = new Date('2024-05-01T08:00:00.000Z');
    for (let i = 0; i < 5; i++) store.keyUsage.record('k1', at);
    store.keyUsage.record('k1', new Date('2024-05-02T08:00:00.000Z'));
    t.same(await store.keyUsage.range('k1', '2024-05-01', '2024-05-31'), [{ day: '2024-05-01', requests: 5 }, { day: '2024-05-02', requests: 1 }],
      'pending counts are included before the flush');
    await store.keyUsage.flush();
    store.keyUsage.record('k1', at);
    t.same((await store.pool.query('SELECT day, requests::int AS n FROM key_usage ORDER BY day')).rows,
      [{ day: '2024-05-01', n: 5 }, { day: '2024-05-02', n: 1 }]);
    t.same(await store.keyUsage.range('k1', '2024-05-01', '2024-05-01'), [{ day: '2024-05-01', requests: 6 }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.same((await store.pool.query("SELECT requests::int AS n FROM key_usage WHERE day = '2024-05-01'")).rows, [{ n: 6 }], 'the timer flushed');
  });

  await t.test('quota and shared settings', async (t) => {
    t.equal(await store.quota.tryConsume('acc_1', '2024-05-01', 2), true);
    t.equal(await store.quota.tryConsume('acc_1', '2024-05-01', 2), true);
    t.equal(await store.quota.tryConsume('acc_1', '2024-05-01', 2), false);
    t.equal(await store.quota.tryConsume('acc_1', '2024-05-02', 2), true, 'a new day');
    t.equal(await store.quota.used('acc_1', '2024-05-01'), 2);
    t.equal(await store.quota.used('acc_1', '2024-04-30'), 0);
    t.equal(await store.settings.get('banner'), undefined);
    await store.settings.set('banner', 'maintenance at 22:00');
    t.equal(await store.settings.get('banner'), 'maintenance at 22:00');
    const secret = await store.settings.secret('csrf', 32);
    t.equal(secret.length, 32);
    t.same(await store.settings.secret('csrf', 32), secret, 'made once');
    await t.rejects(store.settings.set('csrf', 'plain'), /secret/, 'a secret is never overwritten in clear');
    await t.rejects(store.settings.get('csrf'), /secret/);
  });
}
