// The cluster's housekeeping over one PostgreSQL database: with two nodes running it, the change log is pruned
// to [index] change_log_keep by one of them (the other skips), expired and idle sessions go while a live one
// stays, expired request signatures go; a pass while another node holds the lock or right after another
// node's pass does nothing; started on an interval it keeps the log bounded by itself; a cloud node runs it
// from its start to its stop; a database outage is logged and the next pass works again.
import path from 'node:path';
import { Client } from 'pg';
import t from 'tap';
import { startService } from '../../../src/start/start-service';
import { defaultConfig } from '../../../src/config/load';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { ClusterHousekeeping, type HousekeepingLog } from '../../../src/storage/postgres/cluster-housekeeping';
import type { HousekeepingSettings } from '../../../src/storage/postgres/housekeeping';
import { HOUSEKEEPING_LOCK } from '../../../src/storage/postgres/lock-keys';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { FakeEngine } from '../../helpers/fake-engine';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const MODEL = templateModelId();
const KEEP = 10;
const IDLE_MS = 30 * 60_000;

function person(i: number) {
  return { personId: `p${i}`, modelId: MODEL, template: Float32Array.from({ length: templateSize() }, (_, k) => Math.cos(i + k)), referenceImage: Buffer.from([i & 255]) };
}

function recordingLog(): HousekeepingLog & { warnings: string[]; infos: object[] } {
  const warnings: string[] = [];
  const infos: object[] = [];
  return { warnings, infos, info: (obj) => { infos.push(obj); }, warn: (_obj, msg) => { warnings.push(msg); } };
}

async function run(): Promise<void> {
  const { pg, dir, keyFile } = await postgresCluster(t);
  const url = await pg.createDatabase('housekeeping');
  const open = () => openPostgresStore(postgresSettings(url, { connectTimeoutMs: 500 }), { keyFile });
  const a = await open();
  const b = await open();
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  let personCount = 0;
  const writeChanges = async (store: PostgresStore, n: number) => {
    const list = Array.from({ length: n }, () => person(personCount++));
    await store.persons.createMany('acme', list, new Date().toISOString());
  };
  const settings = (minGapMs: number): HousekeepingSettings => ({ changeLogKeep: KEEP, sessionIdleMs: IDLE_MS, signInWindowMs: 60_000, minGapMs });

  await t.test('two nodes at once: one prunes the log to the entries kept and purges ended sessions', async (t) => {
    await writeChanges(a, 60);
    await writeChanges(b, 20);
    const before = await a.changes.lastChange();
    const now = new Date();
    const at = (msAgo: number) => new Date(now.getTime() - msAgo).toISOString();
    const later = new Date(now.getTime() + 3_600_000).toISOString();
    await a.sessions.create('expired', { accountId: 'acme', created: at(7_200_000), lastSeen: at(60_000), expires: at(1000) });
    await a.sessions.create('idle', { accountId: 'acme', created: at(7_200_000), lastSeen: at(IDLE_MS + 1000), expires: later });
    await a.sessions.create('live', { accountId: 'acme', created: at(600_000), lastSeen: at(60_000), expires: later });
    t.ok(await a.replayCache.claim('old signature', new Date(now.getTime() - 600_000), new Date(now.getTime() - 300_000)));

    const nodes = [a, b].map((s) => new ClusterHousekeeping(s.pool, settings(60_000), 60_000, () => undefined, () => now));
    const outcomes = await Promise.all(nodes.map((n) => n.runNow()));
    const ran = outcomes.filter((o) => o?.ran);
    t.equal(ran.length, 1, 'one node did the pass');
    t.match(outcomes.find((o) => o && !o.ran), { ran: false }, 'the other skipped');
    t.match(ran[0], { ran: true, changesPruned: 70, sessionsPurged: 2, signaturesPruned: 1 });
    t.equal(await a.changes.size(), KEEP, 'the log holds the entries kept');
    t.equal(await a.changes.lastChange(), before, 'the last change still counts what was pruned');
    t.ok(await b.changes.covers(before - KEEP), 'a reader within the entries kept can catch up');
    t.notOk(await b.changes.covers(before - KEEP - 1), 'one further behind must resync');
    t.equal(await a.sessions.count(), 1);
    t.ok(await b.sessions.get('live'), 'the live session stays');
  });

  await t.test('a pass right after another node\'s, or while another holds the lock, does nothing', async (t) => {
    await writeChanges(a, 5);
    const node = new ClusterHousekeeping(b.pool, settings(60_000), 60_000, () => undefined);
    t.same(await node.runNow(), { ran: false, reason: 'done recently' });
    const holder = new Client({ connectionString: url });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [HOUSEKEEPING_LOCK]);
    const eager = new ClusterHousekeeping(b.pool, settings(0), 60_000, () => undefined);
    t.same(await eager.runNow(), { ran: false, reason: 'another node is at it' }, 'skipped at once, not queued');
    await holder.query('COMMIT');
    t.match(await eager.runNow(), { ran: true, changesPruned: 5 });
    t.equal(await a.changes.size(), KEEP);
  });

  await t.test('started on an interval on both nodes, it keeps the log bounded by itself', async (t) => {
    const logA = recordingLog();
    const nodes = [new ClusterHousekeeping(a.pool, settings(0), 50, () => logA), new ClusterHousekeeping(b.pool, settings(0), 50, () => undefined)];
    for (const n of nodes) n.start();
    t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
    await writeChanges(b, 40);
    const deadline = Date.now() + 20_000;
    while (await a.changes.size() > KEEP && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    t.equal(await a.changes.size(), KEEP, 'pruned to the entries kept without being asked');
    await Promise.all(nodes.map((n) => n.stop()));
    await writeChanges(b, 5);
    await new Promise((r) => setTimeout(r, 300));
    t.equal(await a.changes.size(), KEEP + 5, 'stopped: nothing prunes any more');
  });

  await t.test('a cloud node runs it from its start to its stop', async (t) => {
    const config = defaultConfig(dir);
    Object.assign(config.server, { mode: 'cloud', host: '127.0.0.1', port: 0 });
    Object.assign(config.storage, { path: path.join(dir, 'node'), backend: 'postgres', postgres_url: url, key_file: keyFile });
    // Below the ini's bounds, set directly: a pass every second down to ten entries.
    Object.assign(config.index, { snapshot_interval_s: 1, change_log_keep: KEEP });
    const node = await startService(config, { engine: new FakeEngine(MODEL), print: () => undefined, logger: false });
    let stopped = false;
    t.teardown(() => (stopped ? undefined : node.close()));
    await writeChanges(a, 30);
    const deadline = Date.now() + 20_000;
    while (await a.changes.size() > KEEP && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.equal(await a.changes.size(), KEEP, 'the node pruned the log');
    await node.close();
    stopped = true;
    await writeChanges(a, 5);
    await new Promise((r) => setTimeout(r, 2500));
    t.equal(await a.changes.size(), KEEP + 5, 'a stopped node prunes nothing');
  });

  await t.test('a database outage is logged and the next pass works', async (t) => {
    const log = recordingLog();
    const node = new ClusterHousekeeping(a.pool, settings(0), 60_000, () => log);
    await pg.halt('fast');
    try {
      t.equal(await node.runNow(), undefined, 'the failed pass resolves: nothing thrown');
      t.match(log.warnings, [/housekeeping failed; trying again at the next interval/]);
    } finally {
      await pg.resume();
    }
    let outcome;
    const deadline = Date.now() + 20_000;
    while (!(outcome = await node.runNow())?.ran && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.match(outcome, { ran: true, changesPruned: 5 }, 'once the database is back, the pass works again');
    t.equal(await a.changes.size(), KEEP);
  });
}
