// One metered request in one store call (quota.meter): the account's plan as stored now picks the limit, the
// count is exact (across two PostgreSQL nodes too), and a person asked for comes back only while it exists.
// Over HTTP on both backends: identify counts after its search yet answers as if it counted first (CP_005
// before RF_001, no-face and removed-match requests counted; past the quota, refused before the analysis), and
// a plan change applies to the next request.
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';
import type { AsyncStore, PlanLimits } from '../../src/storage/interfaces';
import { postgresSettings } from '../../src/storage/postgres/pool';
import { openPostgresStore } from '../../src/storage/postgres/store';
import { openStore } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';
import { BACKENDS, backendSkipReason, startBackendApp } from '../helpers/backends';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';
import { postgresCluster } from '../helpers/postgres';

const DAY = '2024-05-01';
const LIMITS: PlanLimits = { noRecord: 0, free: 3, paid: 0 };
const CP_005 = { code: 'CP_005', message: 'Number of available requests exceeded' };

function account(accountId: string, plan: 'free' | 'paid') {
  const now = new Date().toISOString();
  return { accountId, email: `${accountId}@example.com`, passwordHash: 'scrypt$x', role: 'operator' as const, plan, created: now, updated: now };
}

function person(i: number) {
  return { modelId: 'm1', template: Float32Array.from({ length: 128 }, (_, k) => Math.sin(i + k)), referenceImage: Buffer.from([i]) };
}

async function contract(t: Test, store: AsyncStore): Promise<void> {
  const meter = (accountId: string, personId?: string) =>
    store.quota.meter({ accountId, day: DAY, limits: LIMITS, ...(personId === undefined ? {} : { personId }) });

  await t.test('an account without a record gets noRecord (0: unlimited, nothing written)', async (t) => {
    for (let i = 0; i < 5; i++) t.same(await meter('loose'), { limit: 0, admitted: true });
    t.equal(await store.quota.used('loose', DAY), 0);
  });

  await t.test('a free account is admitted up to its limit, then refused without counting', async (t) => {
    await store.accounts.create(account('acme', 'free'));
    const admitted = [];
    for (let i = 0; i < 5; i++) admitted.push((await meter('acme')).admitted);
    t.same(admitted, [true, true, true, false, false]);
    t.equal(await store.quota.used('acme', DAY), 3);
    t.equal((await meter('acme')).limit, 3);
  });

  await t.test('a plan change applies to the next request', async (t) => {
    await store.accounts.update('acme', (a) => ({ ...a, plan: 'paid' }));
    t.same(await meter('acme'), { limit: 0, admitted: true });
    await store.accounts.update('acme', (a) => ({ ...a, plan: 'free' }));
    t.same(await meter('acme'), { limit: 3, admitted: false });
  });

  await t.test('the asked person comes back with the count while it exists', async (t) => {
    const now = new Date().toISOString();
    await store.persons.create('loose', 'p1', person(1), now);
    const found = await meter('loose', 'p1');
    t.match(found, { limit: 0, admitted: true, person: { personId: 'p1', modelId: 'm1', created: now } });
    t.equal((await meter('loose', 'nobody')).person, undefined);
    await store.persons.remove('loose', 'p1');
    t.equal((await meter('loose', 'p1')).person, undefined, 'removed: absent');
    await store.persons.create('acme', 'p2', person(2), now);
    t.same(await meter('acme', 'p2'), { limit: 3, admitted: false }, 'refused: no person');
  });
}

t.test('LMDB', async (t) => {
  const dir = tempDir();
  const store = lmdbAsyncStore(await openStore(path.join(dir, 'db')));
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  await contract(t, store);
});

t.test('PostgreSQL', { skip: backendSkipReason('postgres') }, async (t) => {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('meter');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 8, statementTimeoutMs: 20_000 }), { keyFile: path.join(dir, 'k') });
  const [a, b] = [await open(), await open()];
  t.teardown(async () => { await a.close(); await b.close(); });
  await contract(t, a);

  await t.test('a limit of 40 admits exactly 40 of 200 requests spread over two nodes', async (t) => {
    await a.accounts.create(account('busy', 'free'));
    const limits = { ...LIMITS, free: 40 };
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) =>
      [a, b][i % 2].quota.meter({ accountId: 'busy', day: DAY, limits })));
    t.equal(answers.filter((x) => x.admitted).length, 40);
    t.equal(await b.quota.used('busy', DAY), 40);
  });
});

for (const backend of BACKENDS) {
  t.test(`identify over HTTP counts as if first (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const app = await startBackendApp(backend, { tune: (c) => { c.quota.requests_per_day = 3; } });
    t.teardown(() => app.close());
    const alice = await fakePhotoB64({ identity: 1 });
    const stranger = await fakePhotoB64({ identity: 2 });
    const identify = (faceImage: string) => app.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage } });
    t.equal((await app.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: alice } })).statusCode, 200);
    t.equal((await identify(alice)).json().personId, 'alice');
    t.equal((await identify(stranger)).json().code, 'RF_001', 'no match: answered RF_001 and counted');
    await app.store.persons.remove('default', 'alice');
    // The index may still hold alice for a moment (PostgreSQL's follower): either way she is not returned.
    t.equal((await identify(alice)).json().code, 'RF_001', 'removed: not returned, counted');
    t.equal(await app.store.quota.used('default', new Date().toISOString().slice(0, 10)), 3);
    const over = await identify(stranger);
    t.same([over.statusCode, over.json()], [400, CP_005], 'CP_005 takes precedence over the search outcome');
    t.equal(await app.store.quota.used('default', new Date().toISOString().slice(0, 10)), 3, 'a refusal is not counted');
    // Past its quota, a client's next photos are refused before any face analysis (for EXHAUSTED_MEMO_MS).
    const engine = app.engine as FakeEngine;
    const analysed = engine.calls;
    const again = await identify(alice);
    t.same([again.statusCode, again.json()], [400, CP_005], 'refused again');
    t.equal(engine.calls, analysed, 'without analysing the photo');
  });
}
