// Two real node processes (`face-check serve`'s start-up with the fake engine) over one PostgreSQL database,
// as cloud mode runs behind a load balancer: a person enrolled on A is identified on B (read-your-writes on
// A, B within the follower's bound: measured); B's update and removal reach A's identify answers; the daily
// quota is exact over both; a signed request replayed to the other node is refused; concurrent creates of
// one person_id on both give one 200 and one CP_002; with the database cut (every backend terminated, then
// the server stopped) requests are answered 503 fast, the nodes serve again once it is back, and every
// acknowledged enrolment is there on both. A node that loses the database during its start-up build exits 69
// (EX_UNAVAILABLE) rather than crashing or hanging, and starts once the database serves.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import t from 'tap';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { generateRsaKeyPair } from '../../../src/storage/records';
import { BOOTSTRAP_KEY } from '../../helpers/app';
import { fakePhotoB64 } from '../../helpers/fake-engine';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';
import { request, startServiceProcess, type ServiceProcess } from '../../helpers/service-process';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const PUBLIC_BASE_URL = 'http://face-check.test';
const QUOTA = 10;

function nodeIni(dir: string, name: string, url: string, keyFile: string): string {
  const file = path.join(dir, `${name}.ini`);
  fs.writeFileSync(file, [
    '[server]', 'mode = cloud', 'host = 127.0.0.1', 'port = 0',
    '[storage]', `path = ./${name}`, 'backend = postgres', `postgres_url = ${url}`, `key_file = ${keyFile}`,
    'postgres_pool_size = 4', 'postgres_statement_timeout_ms = 2000', 'postgres_connect_timeout_ms = 1000',
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`, `public_base_url = ${PUBLIC_BASE_URL}`,
    '[plans]', `free_requests_per_day = ${QUOTA}`,
    '[camera]', 'source = none',
  ].join('\n'));
  return file;
}

const enrolBody = async (identity: number) => ({ faceImage: await fakePhotoB64({ identity }) });

async function withKey(base: string, key: string, method: string, url: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${url}`, { method, headers: { 'api-key': key, ...headers } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Polls `node`'s identify with the identity's photo until it names `personId` (true) or `ms` pass (false). */
async function identifiedWithin(node: ServiceProcess, identity: number, personId: string, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  const body = await enrolBody(identity);
  do {
    const found = await request(node.address, 'POST', '/person/recognize-face', body);
    if (found.status === 200 && found.body.personId === personId) return true;
    await new Promise((r) => setTimeout(r, 2));
  } while (performance.now() < until);
  return false;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(): Promise<void> {
  const { pg, dir, keyFile } = await postgresCluster(t);
  const url = await pg.createDatabase('nodes');
  // Provisioned before the first start, as every node needs the same file.

  const a: ServiceProcess = await startServiceProcess(nodeIni(dir, 'a', url, keyFile), 'fake');
  const b: ServiceProcess = await startServiceProcess(nodeIni(dir, 'b', url, keyFile), 'fake');
  t.teardown(async () => { await a.stop(); await b.stop(); });
  // The test's own connection to the shared database, for accounts and keys the API does not make.
  const admin: PostgresStore = await openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile });
  t.teardown(() => admin.close());

  await t.test('enrolled on A: A identifies it at once, B within the follower bound (measured)', async (t) => {
    const lags: number[] = [];
    for (let i = 0; i < 20; i++) {
      const id = `vis-${i}`;
      const created = await request(a.address, 'POST', `/person/face/${id}`, await enrolBody(100 + i));
      t.equal(created.status, 200, `${id} enrolled on A`);
      const acknowledged = performance.now();
      t.equal((await request(a.address, 'POST', '/person/recognize-face', await enrolBody(100 + i))).body?.personId, id,
        'A identifies its own write at once');
      t.ok(await identifiedWithin(b, 100 + i, id, 2_000), `${id} identified on B`);
      lags.push(performance.now() - acknowledged);
    }
    t.comment(`cross-node visibility after A's 200: p50 ${percentile(lags, 50).toFixed(1)} ms, max ${Math.max(...lags).toFixed(1)} ms`);
    t.ok(percentile(lags, 50) < 1_000, 'B sees A\'s enrolments well within the follower\'s poll bound');
    const removed = await request(b.address, 'DELETE', '/person/face/vis-0');
    t.equal(removed.status, 200, 'removed on B');
    t.equal((await request(b.address, 'POST', '/person/recognize-face', await enrolBody(100))).status, 410, 'gone on B at once');
  });

  await t.test("a person updated, then removed, on B: A's identify answers B's write within the follower bound", async (t) => {
    // A answers an identify of a person it has matched before from what it follows (no statement for an
    // unlimited account): B's update and removal must reach those answers.
    const id = 'followed-meta';
    const photo = await enrolBody(300);
    t.equal((await request(a.address, 'POST', `/person/face/${id}`, photo)).status, 200);
    const first = await request(a.address, 'POST', '/person/recognize-face', photo);
    t.equal(first.body?.personId, id);
    await new Promise((r) => setTimeout(r, 5));  // the update's timestamp differs from the creation's
    const updated = await request(b.address, 'PUT', `/person/face/${id}`, photo);
    t.equal(updated.status, 200, 'updated on B');
    t.not(updated.body.updated, first.body.updated);
    const answersWithin = async (ms: number, ok: (r: { status: number; body: any }) => boolean) => {
      const until = performance.now() + ms;
      do {
        if (ok(await request(a.address, 'POST', '/person/recognize-face', photo))) return true;
        await new Promise((r) => setTimeout(r, 2));
      } while (performance.now() < until);
      return false;
    };
    t.ok(await answersWithin(2_000, (r) => r.status === 200 && r.body.updated === updated.body.updated), "A answers with B's update");
    t.equal((await request(b.address, 'DELETE', `/person/face/${id}`)).status, 200, 'removed on B');
    t.ok(await answersWithin(2_000, (r) => r.status === 410), 'gone on A');
  });

  await t.test('each node\'s /metrics says where its change follower stands', async (t) => {
    await request(a.address, 'POST', '/person/face/metrics-probe', await enrolBody(99));
    const last = await admin.changes.lastChange();
    for (const node of [a, b]) {
      let position = NaN;
      let text = '';
      const until = performance.now() + 5_000;
      do {
        text = await (await fetch(`${node.address}/metrics`)).text();
        position = Number(/^face_check_change_follower_position (\S+)$/m.exec(text)?.[1]);
        // The meter cache's fill begins a second after the follower listens.
        if (position >= last && /^face_check_meter_cache_fills_total\{outcome="completed"\} [1-9]/m.test(text)) {
          t.match(text, /^face_check_change_log_last_seq \d+$/m, 'the log\'s last seq seen');
          t.match(text, /^face_check_change_follower_behind 0$/m, 'nothing behind once caught up');
          t.match(text, /^face_check_change_follower_connected 1$/m, 'connected');
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      } while (performance.now() < until);
      t.equal(position, last, 'the follower position is the log\'s last change');
      t.match(text, /^face_check_meter_cache_fills_total\{outcome="completed"\} [1-9]\d*$/m, 'the meter cache\'s fill completed');
      t.ok(Number(/^face_check_meter_cache_persons (\d+)$/m.exec(text)?.[1]) >= 1, 'and holds the persons');
    }
  });

  await t.test('a daily quota is exact over both nodes', async (t) => {
    const now = new Date().toISOString();
    await admin.accounts.create({ accountId: 'acc_quota', email: 'quota@example.com', passwordHash: 'scrypt$x', role: 'operator', plan: 'free', created: now, updated: now });
    const { key } = await admin.apiKeys.create('acc_quota', 'full', 'quota', now);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      withKey(i % 2 ? a.address : b.address, key, 'GET', `/person/face/nobody-${i}`)));
    const codes = answers.map((r) => r.body.code);
    t.equal(codes.filter((c) => c === 'NF_001').length, QUOTA, `exactly ${QUOTA} admitted over both nodes`);
    t.equal(codes.filter((c) => c === 'CP_005').length, 40 - QUOTA, 'the rest refused with CP_005');
    t.equal(await admin.quota.used('acc_quota', now.slice(0, 10)), QUOTA);
  });

  await t.test('a signed request replayed to the other node is refused', async (t) => {
    const pair = await generateRsaKeyPair();
    const { key } = await admin.apiKeys.create('acc_signed', 'full', 'signed', new Date().toISOString(), pair.publicKey);
    const uri = '/person/face/nobody';
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = crypto.sign('sha256', Buffer.from(`${PUBLIC_BASE_URL}${uri}${timestamp}`), pair.privateKey).toString('base64');
    const headers = { signature, timestamp };
    const first = await withKey(a.address, key, 'GET', uri, headers);
    t.equal(first.body.code, 'NF_001', 'accepted on A (the person is absent)');
    const replay = await withKey(b.address, key, 'GET', uri, headers);
    t.equal(replay.status, 401, 'the replay to B is refused');
    t.equal((await withKey(a.address, key, 'GET', uri, headers)).status, 401, 'and to A');
  });

  await t.test('concurrent creates of one person_id on both nodes: one 200, one CP_002', async (t) => {
    for (let i = 0; i < 6; i++) {
      const id = `race-${i}`;
      const [onA, onB] = await Promise.all([
        request(a.address, 'POST', `/person/face/${id}`, await enrolBody(300 + 2 * i)),
        request(b.address, 'POST', `/person/face/${id}`, await enrolBody(301 + 2 * i)),
      ]);
      t.same([onA.status, onB.status].sort(), [200, 400], `${id}: one created`);
      t.equal([onA, onB].find((r) => r.status === 400)?.body.code, 'CP_002', `${id}: the other CP_002`);
    }
    // One face under two ids at once on two nodes: the account lock and the fence make it one enrolment.
    const [x, y] = await Promise.all([
      request(a.address, 'POST', '/person/face/dup-a', await enrolBody(400)),
      request(b.address, 'POST', '/person/face/dup-b', await enrolBody(400)),
    ]);
    t.same([x.status, y.status].sort(), [200, 400], 'one face, two ids, two nodes: one enrolled');
    t.equal([x, y].find((r) => r.status === 400)?.body.code, 'F_012', 'the other is a duplicate');
  });

  await t.test('database cut and restored: 503 fast, then serving again, nothing acknowledged lost', async (t) => {
    const acknowledged: string[] = [];
    let writing = true;
    let n = 0;
    const writer = async (node: ServiceProcess, tag: string) => {
      while (writing) {
        const id = `cut-${tag}-${n++}`;
        const res = await request(node.address, 'POST', `/person/face/${id}`, await enrolBody(1000 + n)).catch(() => undefined);
        if (res?.status === 200) acknowledged.push(id);
        else if (res && res.status !== 503) t.fail(`${id}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    };
    const writers = [writer(a, 'a'), writer(b, 'b')];
    await new Promise((r) => setTimeout(r, 300));
    // Every connection of the nodes cut under them (pool and change followers).
    const killer = new Client({ connectionString: url });
    await killer.connect();
    const { rowCount } = await killer.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    await killer.end();
    t.ok((rowCount ?? 0) >= 2, `${rowCount} connections terminated`);
    await new Promise((r) => setTimeout(r, 300));
    await pg.halt('immediate');
    const latencies: number[] = [];
    const statuses = new Set<number>();
    for (let i = 0; i < 10; i++) {
      for (const node of [a, b]) {
        const started = performance.now();
        const res = await withKey(node.address, BOOTSTRAP_KEY, 'GET', '/person/face/vis-1');
        latencies.push(performance.now() - started);
        statuses.add(res.status);
        if (res.status === 503) {
          t.equal(res.body.code, 'SERVICE_UNAVAILABLE');
          t.equal(res.headers.get('retry-after'), '1');
        }
      }
    }
    t.same([...statuses], [503], 'every request answered 503 while the database is down');
    t.comment(`503 latency with the database down: p50 ${percentile(latencies, 50).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`);
    t.ok(Math.max(...latencies) < 1_500, 'within the connect timeout, never hanging');
    // 24 random bytes in base64url, as sign-in makes them: the session must be looked up in the database.
    const page = await fetch(`${a.address}/back-office/account`, { headers: { cookie: `fc_session=fcs_${'A'.repeat(32)}` } });
    t.equal(page.status, 503, 'a back-office page is 503 too');
    t.equal(page.headers.get('retry-after'), '1');
    t.match(await page.text(), /cannot reach its database/);
    const ready = await fetch(`${a.address}/health/ready`);
    t.equal(ready.status, 503, 'readiness reports the database');
    t.match(await ready.text(), /database is unavailable/);
    await pg.resume();
    const resumed = performance.now();
    let back = -1;
    while (performance.now() - resumed < 20_000) {
      const [onA, onB] = await Promise.all([
        request(a.address, 'GET', '/person/face/vis-1'), request(b.address, 'GET', '/person/face/vis-1')]);
      if (onA.status === 200 && onB.status === 200) {
        back = performance.now() - resumed;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    t.ok(back >= 0, 'both nodes serve again');
    t.comment(`both nodes serving reads ${back.toFixed(0)} ms after the server accepted again`);
    // A write also waits for the writer's own follower, which reconnects with backoff: measured apart.
    let written = -1;
    for (let attempt = 0; performance.now() - resumed < 20_000; attempt++) {
      const res = await request(a.address, 'POST', `/person/face/after-${attempt}`, await enrolBody(5000 + attempt));
      if (res.status === 200) {
        written = performance.now() - resumed;
        acknowledged.push(`after-${attempt}`);
        t.ok(await identifiedWithin(b, 5000 + attempt, `after-${attempt}`, 2_000), 'B identifies the first enrolment after the outage');
        break;
      }
      t.equal(res.status, 503, 'refused only as unavailable meanwhile');
      await new Promise((r) => setTimeout(r, 50));
    }
    t.ok(written >= 0, 'A enrols again');
    t.comment(`first enrolment acknowledged ${written.toFixed(0)} ms after the server accepted again`);
    await new Promise((r) => setTimeout(r, 500));
    writing = false;
    await Promise.all(writers);
    t.ok(acknowledged.length > 0, `${acknowledged.length} enrolments acknowledged during the test`);
    for (const id of acknowledged) {
      const [onA, onB] = await Promise.all([request(a.address, 'GET', `/person/face/${id}`), request(b.address, 'GET', `/person/face/${id}`)]);
      if (onA.status !== 200 || onB.status !== 200) t.fail(`${id} acknowledged but ${onA.status}/${onB.status}`);
    }
    t.equal(await admin.persons.count('default') >= acknowledged.length, true, 'every acknowledged person is in the table');
  });

  await t.test('a third node started over the populated database holds and identifies every person', async (t) => {
    const c: ServiceProcess = await startServiceProcess(nodeIni(dir, 'c', url, keyFile), 'fake');
    t.teardown(() => c.stop());
    const stored = await admin.persons.count('default');
    const text = await (await fetch(`${c.address}/metrics`)).text();
    t.equal(Number(/^face_check_index_persons\{account="default"\} (\d+)$/m.exec(text)?.[1]), stored, `all ${stored} persons in C's index`);
    for (const i of [1, 7, 19]) {
      const found = await request(c.address, 'POST', '/person/recognize-face', await enrolBody(100 + i));
      t.equal(found.body?.personId, `vis-${i}`, `vis-${i}, enrolled on A before C started, identified on C`);
    }
  });

  await t.test("the database lost during a node's start-up build: it exits 69 (systemd starts it again) and starts once the database serves", async (t) => {
    // The test holds the change log while the node opens its store, and the persons table from the moment
    // the node reads the log's position (just before its build), so the build's COPY waits on the table
    // where the test can cut its connection.
    // A database of its own: A and B, still serving, read the main one's tables.
    const ownUrl = await pg.createDatabase('start_cut');
    const prepared = await openPostgresStore(postgresSettings(ownUrl, { poolSize: 1 }), { keyFile });
    await prepared.close();
    const lockers = [new Client({ connectionString: ownUrl }), new Client({ connectionString: ownUrl })];
    for (const c of lockers) await c.connect();
    t.teardown(() => Promise.all(lockers.map((c) => c.end())));
    const [logLock, tableLock] = lockers;
    await logLock.query('BEGIN');
    await logLock.query('LOCK TABLE person_changes IN ACCESS EXCLUSIVE MODE');
    const ini = nodeIni(dir, 'd', ownUrl, keyFile);
    const child = spawn(process.execPath, [...process.execArgv, path.join(__dirname, '..', '..', 'helpers', 'fake-service-main.ts'), ini],
      { cwd: path.join(__dirname, '..', '..', '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString('utf8'); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString('utf8'); });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const waitingOnLock = async (queryLike: string, terminate: boolean): Promise<boolean> => {
      for (let i = 0; i < 600 && child.exitCode === null; i++) {
        const { rows } = await admin.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity
          WHERE query LIKE $1 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`, [queryLike]);
        if (rows.length) {
          if (terminate) await admin.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
          return true;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return false;
    };
    t.ok(await waitingOnLock('%max(seq) FROM person_changes%', false), 'the node reads the log position before its build');
    await tableLock.query('BEGIN');
    await tableLock.query('LOCK TABLE persons IN ACCESS EXCLUSIVE MODE');
    await logLock.query('ROLLBACK');
    const terminated = await waitingOnLock('BEGIN; SET LOCAL statement_timeout%', true);
    await tableLock.query('ROLLBACK');
    t.ok(terminated, "the node's build was waiting on the table and its connection was cut");
    t.equal(await exited, 69, `exit code 69 (EX_UNAVAILABLE):\n${output}`);
    t.match(output, /face-check: .*(terminat|connection)/i, 'one line says why');
    t.notMatch(output, /Unhandled 'error' event|uncaught/i, 'a failure, not a crash');
    const d: ServiceProcess = await startServiceProcess(ini, 'fake');
    t.teardown(() => d.stop());
    t.equal((await request(d.address, 'POST', '/person/face/after-cut', await enrolBody(300))).status, 200, 'started again, it enrols');
    const found = await request(d.address, 'POST', '/person/recognize-face', await enrolBody(300));
    t.equal(found.body?.personId, 'after-cut', 'and identifies');
  });
}
