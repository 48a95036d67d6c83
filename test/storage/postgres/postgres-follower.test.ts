// The change follower, with writes on one node (pool A) and the follower on another (pool B): 200 changes from
// four concurrent writers all arrive, in seq order, each within a bound of its acknowledgement (p50/p99
// reported); inside an exclusive section, waiting for the fence makes a slow follower's gallery hold what the
// other node enrolled; a change committed without a notification arrives by the poll; the follower's connection
// terminated by pg_terminate_backend is replaced and the changes written meanwhile arrive (with the poll far
// too slow to be what delivered them); the server restarted as by a crash while writers keep going loses
// nothing acknowledged; a follower behind a pruned log is told to resync.
import path from 'node:path';
import t, { type Test } from 'tap';
import type { ChangeFollower } from '../../../src/storage/postgres/change-follower';
import type { PersonChange } from '../../../src/storage/interfaces';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function input(i: number) {
  return { modelId: 'm1', template: Float32Array.from({ length: 64 }, (_, k) => Math.cos(i + k)), referenceImage: Buffer.from([i & 255]) };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** What a follower delivered: every change with when it arrived, and whether seqs only ever grew. */
class Received {
  readonly at = new Map<string, number>();
  readonly seqs: number[] = [];
  ordered = true;

  readonly onChanges = async (batch: readonly PersonChange[]): Promise<void> => {
    for (const c of batch) {
      if (this.seqs.length && c.seq <= this.seqs[this.seqs.length - 1]) this.ordered = false;
      this.seqs.push(c.seq);
      this.at.set(`${c.accountId}/${c.personId}`, Date.now());
    }
  };

  /** Resolves when every id has arrived; rejects after `ms`. */
  async all(ids: Iterable<string>, ms: number): Promise<void> {
    const wanted = [...ids];
    const deadline = Date.now() + ms;
    while (wanted.some((id) => !this.at.has(id))) {
      if (Date.now() > deadline) throw new Error(`${wanted.filter((id) => !this.at.has(id)).length} of ${wanted.length} changes never arrived`);
      await sleep(5);
    }
  }
}

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('follow');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 6, connectTimeoutMs: 1_000 }), { keyFile: path.join(dir, 'k') });
  const a = await open();
  const b = await open();
  t.teardown(async () => { await a.close(); await b.close(); });

  const follow = async (t: Test, received: Received, pollIntervalMs: number): Promise<ChangeFollower> => {
    const follower = b.followChanges({ after: await b.changes.lastChange(), onChanges: received.onChanges, pollIntervalMs,
      onResync: () => b.changes.lastChange() });
    t.teardown(() => follower.stop());
    await follower.start();
    return follower;
  };

  await t.test('200 changes from four writers on A reach the follower on B in order, within a bound', async (t) => {
    const received = new Received();
    await follow(t, received, 1_000);
    const acked = new Map<string, number>();
    await Promise.all([0, 1, 2, 3].map(async (w) => {
      for (let i = 0; i < 50; i++) {
        const id = `lag-${w}-${i}`;
        await a.persons.create('acme', id, input(i), new Date().toISOString());
        acked.set(`acme/${id}`, Date.now());
      }
    }));
    await received.all(acked.keys(), 10_000);
    const lags = [...acked].map(([id, ackAt]) => Math.max(0, received.at.get(id)! - ackAt)).sort((x, y) => x - y);
    t.equal(lags.length, 200);
    t.ok(received.ordered, 'seq only grows');
    t.comment(`follower lag after the writer's acknowledgement, 200 changes: p50 ${percentile(lags, 50)} ms, ` +
      `p99 ${percentile(lags, 99)} ms, max ${lags[lags.length - 1]} ms`);
    t.ok(percentile(lags, 99) < 2_000, `p99 ${percentile(lags, 99)} ms within the 2 s bound`);
  });

  await t.test('the enrolment flow: inside B\'s section, waitFor(fence) makes B\'s gallery hold what A enrolled', async (t) => {
    // B's "gallery" is a set its follower fills, slowly: each batch takes 300 ms to apply.
    const gallery = new Set<string>();
    const follower = b.followChanges({
      after: await b.changes.lastChange(), pollIntervalMs: 1_000, onResync: () => b.changes.lastChange(),
      onChanges: async (batch) => {
        await sleep(300);
        for (const c of batch) gallery.add(`${c.accountId}/${c.personId}`);
      },
    });
    t.teardown(() => follower.stop());
    await follower.start();
    await a.exclusive('flow', (scope) => scope.persons.create('flow', 'first', input(1), new Date().toISOString()));
    const seen = await b.exclusive('flow', async (scope) => {
      const before = gallery.has('flow/first');
      await follower.waitFor(scope.fence.seq, 5_000);
      return { before, after: gallery.has('flow/first') };
    });
    t.same(seen, { before: false, after: true }, 'not applied yet when the lock was taken; applied after waitFor');
    const err = await follower.waitFor(follower.position + 1_000_000, 100).then(() => undefined, (e: unknown) => e);
    t.match(err, { name: 'DatabaseUnavailableError', reason: 'timeout' }, 'a position never reached times out (503)');
  });

  await t.test('a change committed without a notification arrives by the poll', async (t) => {
    const received = new Received();
    await follow(t, received, 200);
    await a.pool.query("INSERT INTO person_changes (account_id, person_id, op, model_id) VALUES ('acme', 'silent', 'create', 'm1')");
    await received.all(['acme/silent'], 5_000);
    t.pass('delivered');
  });

  await t.test('the follower\'s connection terminated: it reconnects and catches up, nothing missed', async (t) => {
    const received = new Received();
    // A poll slower than the test: what arrives, arrives by the reconnect's catch-up or a notification.
    const follower = await follow(t, received, 600_000);
    const { rows } = await a.pool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name LIKE '%change follower' AND datname = current_database()");
    t.equal(rows.length, 1, 'one follower connection');
    const killedAt = Date.now();
    await a.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    const reconnected = (async () => {
      while (!follower.connected || follower.stats.reconnects === 0) await sleep(2);
      return Date.now() - killedAt;
    })();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      await a.persons.create('acme', `kill-${i}`, input(i), new Date().toISOString());
      ids.push(`acme/kill-${i}`);
    }
    const writtenMs = Date.now() - killedAt;
    await received.all(ids, 30_000);
    t.comment(`terminated: reconnected after ${await reconnected} ms; 50 changes written in the ${writtenMs} ms after the kill, ` +
      `all delivered ${Date.now() - killedAt} ms after it`);
    t.equal(follower.stats.reconnects, 1);
    t.ok(received.ordered);
  });

  await t.test('the server restarted (immediate) while writers continue: nothing acknowledged is lost', async (t) => {
    const received = new Received();
    const follower = await follow(t, received, 1_000);
    const acked: string[] = [];
    let failed = 0;
    let stop = false;
    let n = 0;
    const writer = async (w: number) => {
      while (!stop) {
        const id = `restart-${w}-${n++}`;
        try {
          if ((await a.persons.create('acme', id, input(n), new Date().toISOString())).created) acked.push(`acme/${id}`);
        } catch {
          failed++;  // not acknowledged (the commit may or may not have happened)
          await sleep(20);
        }
      }
    };
    const writers = [0, 1, 2].map(writer);
    while (acked.length < 100) await sleep(5);
    const restartAt = Date.now();
    await pg.restart('immediate');
    const upAt = Date.now();
    const before = acked.length;
    while (acked.length < before + 100) await sleep(5);
    stop = true;
    await Promise.all(writers);
    await received.all(acked, 30_000);
    t.comment(`restart: server down ${upAt - restartAt} ms, ${failed} writes refused meanwhile; follower reconnects ${follower.stats.reconnects}, ` +
      `every acknowledged change delivered ${Date.now() - upAt} ms after the server was up`);
    t.ok(failed > 0, 'writes did fail while the server was down');
    t.ok(follower.stats.reconnects >= 1, 'the follower reconnected');
    t.ok(received.ordered, 'seq only grows across the restart');
    const { rows } = await b.pool.query<{ id: string }>("SELECT account_id || '/' || person_id AS id FROM persons WHERE person_id LIKE 'restart-%'");
    const stored = new Set(rows.map((r) => r.id));
    t.equal(acked.filter((id) => !stored.has(id)).length, 0, `all ${acked.length} acknowledged persons are stored`);
  });

  await t.test('a follower behind a pruned log resyncs, then follows on', async (t) => {
    const from = await b.changes.lastChange();
    await a.persons.create('acme', 'before-prune', input(1), new Date().toISOString());
    t.ok(await a.changes.pruneBefore(new Date(Date.now() + 60_000)) > 0, 'the whole log pruned');
    t.ok(await a.changes.lastChange() > from, 'lastSeq still counts what was pruned');
    const received = new Received();
    let resyncs = 0;
    const follower = b.followChanges({ after: from, onChanges: received.onChanges, pollIntervalMs: 200,
      onResync: async () => { resyncs++; return b.changes.lastChange(); } });
    t.teardown(() => follower.stop());
    await follower.start();
    t.equal(resyncs, 1, 'told to rebuild: the change it missed is gone from the log');
    await a.persons.create('acme', 'after-prune', input(2), new Date().toISOString());
    await received.all(['acme/after-prune'], 5_000);
    t.notOk(received.at.has('acme/before-prune'));
    t.equal(resyncs, 1);
  });
}
