// A following node meters an unlimited account's identify or verify without a database round trip: the
// account's plan and the matched person's meta come from what its change follower keeps current. Two
// stores over one database, each with a follower: node A's statements are counted. What another node
// writes (a plan, by its repository or by hand in SQL; a person created, changed or removed) reaches A's
// answers once A's follower has it; A's own writes at once; a limited account is always counted in the
// database; a lost follower connection makes A read the database again until it listens once more.
import path from 'node:path';
import { Client } from 'pg';
import t from 'tap';
import type { PlanLimits } from '../../../src/storage/interfaces';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import type { ChangeFollower } from '../../../src/storage/postgres/change-follower';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { postgresCluster, postgresSkipReason } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const DAY = '2026-11-27';
const LIMITS: PlanLimits = { noRecord: 0, free: 3, paid: 0 };
const MODEL = templateModelId();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function person(i: number) {
  return { modelId: MODEL, template: Float32Array.from({ length: templateSize() }, (_, k) => Math.sin(i + k)), referenceImage: Buffer.from([i]) };
}

function account(accountId: string, plan: 'free' | 'paid') {
  const now = new Date().toISOString();
  return { accountId, email: `${accountId}@example.com`, passwordHash: 'scrypt$x', role: 'operator' as const, plan, created: now, updated: now };
}

/** Counts the metering statements a store sends. */
function countMeters(store: PostgresStore): () => number {
  let n = 0;
  const query = store.pool.query.bind(store.pool);
  store.pool.query = ((text: string, values?: unknown[], prepared?: string) => {
    if (prepared === 'face_check_quota_meter') n++;
    return query(text, values, prepared);
  }) as typeof store.pool.query;
  return () => n;
}

async function follow(store: PostgresStore): Promise<ChangeFollower> {
  const follower = store.followChanges({
    after: await store.changes.lastChange(), withTemplates: true,
    onChanges: async () => undefined, onResync: () => store.changes.lastChange(), pollIntervalMs: 200, reconnectDelayMs: 50,
  });
  await follower.start();
  return follower;
}

/** Polls `probe` until it returns true; false after `ms`. */
async function within(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(5);
  }
  return false;
}

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('meter_caches');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 4, connectTimeoutMs: 1_000 }), { keyFile: path.join(dir, 'k') });
  const a = await open();
  const b = await open();
  const meters = countMeters(a);
  let followerA = await follow(a);
  const followerB = await follow(b);
  t.teardown(async () => {
    await followerA.stop();
    await followerB.stop();
    await a.close();
    await b.close();
  });
  const meter = (accountId: string, personId?: string) =>
    a.quota.meter({ accountId, day: DAY, limits: LIMITS, ...(personId === undefined ? {} : { personId }) });

  await t.test('an unlimited account: the first request reads its plan, the next ones make no statement', async (t) => {
    const before = meters();
    for (let i = 0; i < 5; i++) t.same(await meter('loose'), { limit: 0, admitted: true });
    t.equal(meters() - before, 1);
  });

  await t.test('a person another node created is answered with its meta, without a statement, once followed', async (t) => {
    const created = new Date(Date.now() - 60_000).toISOString();
    await b.persons.create('loose', 'p1', person(1), created);
    await followerA.waitFor(await b.changes.lastChange(), 5_000);
    const before = meters();
    t.same(await meter('loose', 'p1'), { limit: 0, admitted: true, person: { personId: 'p1', created, updated: created, modelId: MODEL } });
    t.equal(meters() - before, 0);
  });

  await t.test('a person changed or removed on another node is answered as it is now once followed', async (t) => {
    const later = new Date(Date.now() - 1_000).toISOString();
    await b.persons.replace('loose', 'p1', person(2), later);
    await followerA.waitFor(await b.changes.lastChange(), 5_000);
    t.equal((await meter('loose', 'p1')).person?.updated, later);
    await b.persons.remove('loose', 'p1');
    await followerA.waitFor(await b.changes.lastChange(), 5_000);
    const before = meters();
    t.equal((await meter('loose', 'p1')).person, undefined, 'removed: absent');
    t.equal(meters() - before, 1, 'a person not known is read from the database');
  });

  await t.test('a person loaded before this node followed is answered from the fill, without a statement', async (t) => {
    const created = new Date().toISOString();
    // Written while A's follower is stopped and then restarted after it: as a person of the start-up build.
    await followerA.stop();
    await b.persons.create('loose', 'p3', person(3), created);
    const completed = a.meterCaches.fillStats.completed;
    followerA = await follow(a);
    await a.meterCaches.filled();
    t.equal(a.meterCaches.fillStats.completed, completed + 1, 'a fill ran once the follower listened');
    t.ok(a.meterCaches.fillStats.lastKept >= 1, `it kept ${a.meterCaches.fillStats.lastKept} persons`);
    const before = meters();
    t.same(await meter('loose'), { limit: 0, admitted: true });
    t.equal(meters() - before, 1, 'the plan is read once (the restart emptied the plans)');
    const again = meters();
    t.same(await meter('loose', 'p3'), { limit: 0, admitted: true, person: { personId: 'p3', created, updated: created, modelId: MODEL } });
    t.equal(meters() - again, 0, 'the first request for the person made no statement');
  });

  await t.test('a limited account is counted in the database on every request, exact with the other node', async (t) => {
    await b.accounts.create(account('acme', 'free'));
    const before = meters();
    const answers = await Promise.all([meter('acme'), b.quota.meter({ accountId: 'acme', day: DAY, limits: LIMITS }), meter('acme'), meter('acme')]);
    t.equal(answers.filter((r) => r.admitted).length, 3);
    t.equal(await a.quota.used('acme', DAY), 3);
    t.equal(meters() - before, 3);
  });

  await t.test("another node's plan change reaches this node's next requests once notified", async (t) => {
    await b.accounts.update('acme', (x) => ({ ...x, plan: 'paid' }));
    // Once the notification has come (a read before it may be dropped by it), unlimited and cached: no statement.
    t.ok(await within(5_000, async () => {
      const before = meters();
      return (await meter('acme')).limit === 0 && meters() === before;
    }), 'raised to paid (unlimited), then answered without a statement');
    await b.accounts.update('acme', (x) => ({ ...x, plan: 'free' }));
    t.ok(await within(5_000, async () => (await meter('acme')).limit === 3), 'lowered to free: counted again');
    t.same(await meter('acme'), { limit: 3, admitted: false });
  });

  await t.test('a plan written by hand in SQL is noticed too (the table notifies)', async (t) => {
    await b.accounts.create(account('hand', 'paid'));
    t.ok(await within(5_000, async () => (await meter('hand')).limit === 0));
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`UPDATE accounts SET plan = 'free' WHERE account_id = 'hand'`);
    } finally {
      await c.end();
    }
    t.ok(await within(5_000, async () => (await meter('hand')).limit === 3));
  });

  await t.test("this node's own plan change applies to its very next request", async (t) => {
    await a.accounts.create(account('own', 'paid'));
    t.equal((await meter('own')).limit, 0);
    t.equal((await meter('own')).limit, 0);
    await a.accounts.update('own', (x) => ({ ...x, plan: 'free' }));
    t.same(await meter('own'), { limit: 3, admitted: true });
  });

  await t.test('a TRUNCATE of the accounts drops every cached plan', async (t) => {
    // Limits under which the cached paid plan (0: no statement) and no record at all (5) differ.
    const limits: PlanLimits = { noRecord: 5, free: 3, paid: 0 };
    const meterWith = () => a.quota.meter({ accountId: 'wiped', day: DAY, limits });
    await b.accounts.create(account('wiped', 'paid'));
    t.ok(await within(5_000, async () => {
      const before = meters();
      return (await meterWith()).limit === 0 && meters() === before;
    }), 'paid, cached');
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('TRUNCATE accounts');
    } finally {
      await c.end();
    }
    t.ok(await within(5_000, async () => (await meterWith()).limit === 5), 'no record any more: counted against [quota]');
  });

  await t.test('the follower connection lost: the database is read again until the follower listens again', async (t) => {
    await a.accounts.create(account('steady', 'paid'));
    let before = 0;
    const cached = async () => {
      before = meters();
      await meter('steady');
      return meters() === before;
    };
    t.ok(await within(5_000, cached), 'cached (once the create\'s own notification has come)');
    const admin = new Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%change follower'`);
    } finally {
      await admin.end();
    }
    t.ok(await within(5_000, async () => {
      before = meters();
      await meter('steady');
      return meters() - before === 1;
    }), 'not trusted while not listening (or just listening again: emptied)');
    t.ok(await within(5_000, cached), 'trusted again once the follower listens');
  });

  await t.test('after a lost connection the persons are filled again, and the fill keeps no one removed since', async (t) => {
    const created = new Date().toISOString();
    for (let i = 10; i < 15; i++) await b.persons.create('steady', `q${i}`, person(i), created);
    await followerA.waitFor(await b.changes.lastChange(), 5_000);
    const admin = new Client({ connectionString: url });
    await admin.connect();
    const completed = a.meterCaches.fillStats.completed;
    try {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%change follower'`);
      // Removed while A's follower reconnects and fills: the removal's delivery wins over any page that read it.
      await b.persons.remove('steady', 'q12');
    } finally {
      await admin.end();
    }
    t.ok(await within(5_000, async () => a.meterCaches.fillStats.completed > completed), 'a fill completed after the reconnection');
    await a.meterCaches.filled();
    await followerA.waitFor(await b.changes.lastChange(), 5_000);
    await meter('steady');  // the plan, emptied by the reconnection
    const before = meters();
    for (const i of [10, 11, 13, 14]) t.equal((await meter('steady', `q${i}`)).person?.created, created, `q${i} answered`);
    t.equal(meters() - before, 0, 'from the cache: no statement');
    t.equal((await meter('steady', 'q12')).person, undefined, 'the removed person is absent');
    t.equal(meters() - before, 1, 'and, not known, read from the database');
  });
}
