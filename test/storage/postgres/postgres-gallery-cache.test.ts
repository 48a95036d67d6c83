// A PostgreSQL node with its gallery cache (the index keeps int8 codes and re-ranks from the node's local copy
// of the sealed templates), as real node processes over one database beside a node without it (float32 copies
// in memory): both answer identify alike; a write on the other node reaches the cached node; a restart keeps
// the cache and replays only the log since it (persons added, updated and removed meanwhile answered as the
// database holds them from the first request); a cache that is damaged, left open by a machine that went
// down, missing, behind a pruned log, or ahead of a database restored from a backup is made anew from the
// table; a row damaged while the node serves is left out of searches, counted and written again; a resync
// while the node serves keeps it answering.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { GALLERY_CACHE_DIR } from '../../../src/storage/postgres/gallery-cache';
import { FAKE_MODEL_ID, fakePhotoB64, templateFor } from '../../helpers/fake-engine';
import { postgresBinDir, postgresSkipReason, postgresCluster } from '../../helpers/postgres';
import { identifyAnswer as identify, request, startServiceProcess, until, writePostgresNodeIni, type ServiceProcess } from '../../helpers/service-process';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const ACCOUNT = 'default';  // the bootstrap key's account
const PRELOADED = 400;

function nodeIni(dir: string, name: string, url: string, keyFile: string, cache: boolean): string {
  // Every start here reads the cache's rows: index snapshots in their stead are postgres-node-snapshots.test.ts's.
  return writePostgresNodeIni(dir, `${name}.ini`, { name, url, keyFile, storage: [`gallery_cache = ${cache}`], extra: ['[index]', 'snapshot = false'] });
}

const photo = async (identity: number, variant = 0, cosine = 1) => ({ faceImage: await fakePhotoB64({ identity, variant, cosine }) });

/** Where the node's start-up build came from, as its "galleries loaded" log line says. */
function startedFrom(node: ServiceProcess): string | undefined {
  const line = node.output().split('\n').find((l) => l.includes('galleries loaded'));
  return line ? JSON.parse(line).gallery_cache : undefined;
}

async function metric(node: ServiceProcess, name: string): Promise<number> {
  const text = await (await fetch(`${node.address}/metrics`)).text();
  return Number(new RegExp(`^face_check_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

async function run(): Promise<void> {
  const { pg, dir, keyFile } = await postgresCluster(t);
  const url = await pg.createDatabase('gallery_cache');
  const admin: PostgresStore = await openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile });
  t.teardown(() => admin.close());
  const now = new Date().toISOString();
  // Persons 0..PRELOADED-1 with identity 1000+i; every tenth has a near twin (cosine 0.97), so the int8 order
  // alone could pick the wrong one of a pair and only the exact re-rank tells them apart.
  const persons = Array.from({ length: PRELOADED }, (_, i) => ({
    personId: `p-${i}`, modelId: FAKE_MODEL_ID, referenceImage: Buffer.from('x'),
    template: i % 10 === 9 ? templateFor(1000 + i - 1, 7, 0.97) : templateFor(1000 + i, 0, 1),
  }));
  await admin.persons.createMany(ACCOUNT, persons, now);

  const aIni = nodeIni(dir, 'a', url, keyFile, true);
  let a = await startServiceProcess(aIni, 'fake');
  const b = await startServiceProcess(nodeIni(dir, 'b', url, keyFile, false), 'fake');
  t.teardown(async () => { await a.stop(); await b.stop(); });
  const cacheDir = path.join(dir, 'a', GALLERY_CACHE_DIR);

  await t.test('the cached node answers identify as the node with float32 copies does', async (t) => {
    t.equal(startedFrom(a), 'database', 'the first start fills the cache from the table');
    t.equal(startedFrom(b), undefined, 'the node without a cache keeps float32 copies');
    t.ok(fs.existsSync(path.join(cacheDir, 'data.mdb')), 'the cache is in <path>/gallery-cache');
    const answers: Array<[string, string]> = [];
    for (let i = 0; i < 60; i++) {
      // Photos near a person (cosine 0.9 to its identity), the near twins' identities, and strangers.
      const body = i < 40 ? await photo(1000 + i * 7 % PRELOADED, 3, 0.9) : i < 50 ? await photo(1000 + (i - 40) * 10 + 8, 0, 1) : await photo(90_000 + i);
      answers.push([await identify(a, body), await identify(b, body)]);
    }
    t.same(answers.map(([x]) => x), answers.map(([, y]) => y), 'the same answer for every photo');
    t.ok(answers.filter(([x]) => x.startsWith('p-')).length >= 45, 'matches among them');
    t.ok(answers.some(([x]) => x.startsWith('410')), 'and no-matches');
  });

  await t.test('a person enrolled on the other node reaches the cached node', async (t) => {
    t.equal((await request(b.address, 'POST', '/person/face/from-b', await photo(5001))).status, 200);
    t.ok(await until(5_000, async () => (await identify(a, await photo(5001))) === 'from-b'), 'identified on A');
  });

  await t.test('a restart keeps the cache and catches up from it: writes made meanwhile answer as the database holds them', async (t) => {
    t.equal(await a.stop(), 0, 'A stopped');
    // While A is down: B adds one, replaces one's face with another identity's, removes one.
    t.equal((await request(b.address, 'POST', '/person/face/while-away', await photo(6001))).status, 200);
    t.equal((await request(b.address, 'PUT', '/person/face/p-1', await photo(6002))).status, 200);
    t.equal((await request(b.address, 'DELETE', '/person/face/p-2')).status, 200);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'cache', 'the build read the cache');
    // The first answers, with no wait: the follower replayed the log since the cache before the node served.
    t.equal(await identify(a, await photo(6001)), 'while-away', 'added meanwhile');
    t.equal(await identify(a, await photo(6002)), 'p-1', 'updated meanwhile: its new face');
    t.not(await identify(a, await photo(1001)), 'p-1', 'and not its old one');
    t.not(await identify(a, await photo(1002)), 'p-2', 'removed meanwhile: never matched');
    t.equal(await identify(a, await photo(1003)), 'p-3', 'the others as before');
  });

  await t.test('a person removed on the other node is never matched once the change is followed', async (t) => {
    t.equal(await identify(a, await photo(1004)), 'p-4');
    t.equal((await request(b.address, 'DELETE', '/person/face/p-4')).status, 200);
    const target = await admin.changes.lastChange();
    t.ok(await until(5_000, async () => Number(/^face_check_change_follower_position (\S+)$/m.exec(await (await fetch(`${a.address}/metrics`)).text())?.[1]) >= target));
    for (let i = 0; i < 5; i++) t.not(await identify(a, await photo(1004)), 'p-4', 'not matched');
  });

  await t.test('a damaged cache is made anew from the table', async (t) => {
    t.equal(await a.stop(), 0);
    const file = path.join(cacheDir, 'data.mdb');
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(64 * 1024, 0xa5), 0, 64 * 1024, 0);
    fs.closeSync(fd);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database', 'copied from the table');
    t.equal(await identify(a, await photo(1005)), 'p-5');
    t.equal(await identify(a, await photo(6001)), 'while-away');
  });

  await t.test('a cache left open when the machine went down is made anew from the table', async (t) => {
    t.equal(await a.kill9(), undefined);
    // As a machine that went down with the node running leaves it: open, under another boot.
    fs.writeFileSync(path.join(cacheDir, 'open.json'), JSON.stringify({ open: true, boot: 'an-earlier-boot' }));
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database', 'copied from the table');
    t.equal(await identify(a, await photo(1005)), 'p-5');
    t.equal(await a.stop(), 0);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'cache', 'then trusted again after an orderly stop');
  });

  await t.test('a cache whose rows do not open is made anew from the table', async (t) => {
    t.equal(await a.stop(), 0);
    // Another data key's cache: the same rows under a key this database does not have cannot open. Made by
    // flipping a byte in every sealed row: LMDB reads fine, the rows fail their tag.
    const { open } = await import('lmdb');
    const env = open({ path: cacheDir, maxDbs: 4 });
    const rows = env.openDB<Buffer, [string, string]>({ name: 'rows', encoding: 'binary' });
    await env.transaction(() => {
      for (const { key, value } of rows.getRange()) {
        const v = Buffer.from(value);
        v[v.length - 1] ^= 1;
        void rows.put(key, v);
      }
    });
    await env.close();
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database', 'copied from the table');
    t.equal(await identify(a, await photo(1006)), 'p-6', 'its rows open again');
  });

  await t.test('a missing cache is made anew; a cache behind a pruned log too', async (t) => {
    t.equal(await a.stop(), 0);
    fs.rmSync(cacheDir, { recursive: true });
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database');
    t.equal(await identify(a, await photo(1007)), 'p-7');
    t.equal(await a.stop(), 0);
    t.equal((await request(b.address, 'DELETE', '/person/face/p-8')).status, 200);
    t.equal((await request(b.address, 'POST', '/person/face/after-prune', await photo(7001))).status, 200);
    await admin.changes.prune(0);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database', 'the log no longer covers the cache: copied from the table');
    t.not(await identify(a, await photo(1008)), 'p-8', 'removed while the log was pruned: never matched');
    t.equal(await identify(a, await photo(7001)), 'after-prune');
  });

  await t.test('a row damaged while the node serves is left out, counted, logged without the person, and written again', async (t) => {
    t.equal(await identify(a, await photo(1010)), 'p-10');
    // Written by another process into the running node's environment, as a bad disk block would read.
    const { open } = await import('lmdb');
    const env = open({ path: cacheDir, maxDbs: 4 });
    const rows = env.openDB<Buffer, [string, string]>({ name: 'rows', encoding: 'binary' });
    const good = Buffer.from(rows.getBinary([ACCOUNT, 'p-10'])!);
    const bad = Buffer.from(good);
    bad[bad.length - 1] ^= 1;
    await rows.put([ACCOUNT, 'p-10'], bad);
    t.not(await identify(a, await photo(1010)), 'p-10', 'left out of the search that found it damaged');
    t.equal(await metric(a, 'gallery_cache_row_faults_total'), 1, 'counted');
    t.ok(await until(5_000, async () => rows.getBinary([ACCOUNT, 'p-10'])?.equals(good) === true), 'written again from the table');
    await env.close();
    t.equal(await identify(a, await photo(1010)), 'p-10', 'matched again');
    const line = a.output().split('\n').find((l) => l.includes('a row did not open'));
    t.ok(line, 'logged');
    t.equal(JSON.parse(line!).account, ACCOUNT, 'with the account');
    t.equal(JSON.parse(line!).repair, 'written');
    t.notOk(line!.includes('p-10'), 'and not the person');
  });

  await t.test('a row damaged in the table too is left out and not asked for again', async (t) => {
    t.equal(await identify(a, await photo(1014)), 'p-14');
    const { rows: [row] } = await admin.pool.query<{ sealed_template: Buffer }>(
      'SELECT sealed_template FROM persons WHERE account_id = $1 AND person_id = $2', [ACCOUNT, 'p-14']);
    const bad = Buffer.from(row.sealed_template);
    bad[bad.length - 1] ^= 1;
    await admin.pool.query('UPDATE persons SET sealed_template = $1 WHERE account_id = $2 AND person_id = $3', [bad, ACCOUNT, 'p-14']);
    const { open } = await import('lmdb');
    const env = open({ path: cacheDir, maxDbs: 4 });
    const rows = env.openDB<Buffer, [string, string]>({ name: 'rows', encoding: 'binary' });
    await rows.put([ACCOUNT, 'p-14'], bad);
    await env.close();
    const before = await metric(a, 'gallery_cache_row_faults_total');
    for (let i = 0; i < 3; i++) t.not(await identify(a, await photo(1014)), 'p-14', 'left out');
    t.equal(await metric(a, 'gallery_cache_row_faults_total'), before + 3, 'every search that met it counted');
    t.ok(await until(5_000, async () => a.output().includes('"repair":"same-in-table"')), 'logged as the table\'s own damage');
    t.equal(a.output().split('\n').filter((l) => l.includes('"repair":"same-in-table"')).length, 1, 'asked of the table once');
    // Written again (a new face for the person): found again.
    t.equal((await request(b.address, 'PUT', '/person/face/p-14', await photo(1014))).status, 200);
    t.ok(await until(5_000, async () => (await identify(a, await photo(1014))) === 'p-14'), 'found once written again');
  });

  await t.test('a resync while the node serves: it answers throughout, then as the database holds it, and keeps its cache', async (t) => {
    // The node stops following (paused); meanwhile the log is pruned past it, so it must copy the table again.
    a.child.kill('SIGSTOP');
    t.equal((await request(b.address, 'DELETE', '/person/face/p-11')).status, 200);
    t.equal((await request(b.address, 'POST', '/person/face/during-pause', await photo(8001))).status, 200);
    for (let i = 0; i < 3; i++) t.equal((await request(b.address, 'POST', `/person/face/filler-${i}`, await photo(8100 + i))).status, 200);
    await admin.changes.prune(1);
    a.child.kill('SIGCONT');
    const statuses: number[] = [];
    let resynced = false;
    const deadline = performance.now() + 20_000;
    while (!resynced && performance.now() < deadline) {
      statuses.push((await request(a.address, 'POST', '/person/recognize-face', await photo(1012))).status);
      resynced = await metric(a, 'change_follower_resyncs_total') >= 1 && await metric(a, 'change_follower_behind') === 0;
    }
    t.ok(resynced, 'resynced');
    t.same([...new Set(statuses)], [200], 'every identify meanwhile answered');
    t.ok(await until(5_000, async () => (await identify(a, await photo(8001))) === 'during-pause'), 'added while paused: matched');
    t.not(await identify(a, await photo(1011)), 'p-11', 'removed while paused: never matched');
    t.equal(await a.stop(), 0);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'cache', 'the resynced cache is trusted at the next start');
    t.not(await identify(a, await photo(1011)), 'p-11', 'the copy removed the row it did not see');
    t.equal(await identify(a, await photo(8001)), 'during-pause');
  });

  await t.test('a cache ahead of a database restored from a backup is made anew from the table', async (t) => {
    const bin = postgresBinDir()!;
    const dump = path.join(dir, 'backup.dump');
    execFileSync(path.join(bin, 'pg_dump'), ['-Fc', '-f', dump, '-d', url]);
    // After the backup: two persons the node follows into its cache (its position moves past the backup's).
    t.equal((await request(b.address, 'POST', '/person/face/after-backup-1', await photo(9001))).status, 200);
    t.equal((await request(b.address, 'POST', '/person/face/after-backup-2', await photo(9002))).status, 200);
    const cachedThrough = await admin.changes.lastChange();
    t.ok(await until(5_000, async () => await metric(a, 'change_follower_position') >= cachedThrough), 'the cached node followed them');
    t.equal(await a.stop(), 0);
    t.equal(await b.stop(), 0);
    execFileSync(path.join(bin, 'pg_restore'), ['--clean', '--if-exists', '-d', url, dump]);
    // The restored database draws the seqs after the backup again, for other persons, past the cache's position.
    const restored = await openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile });
    t.teardown(() => restored.close());
    let n = 0;
    while (await restored.changes.lastChange() < cachedThrough + 1) {
      await restored.persons.create(ACCOUNT, `restored-${n}`, { modelId: FAKE_MODEL_ID, template: templateFor(9100 + n, 0, 1), referenceImage: Buffer.from('x') }, new Date().toISOString());
      n++;
    }
    a = await startServiceProcess(aIni, 'fake');
    t.equal(startedFrom(a), 'database', 'copied from the table');
    t.not(await identify(a, await photo(9001)), 'after-backup-1', 'a person the restored database does not hold: never matched');
    t.equal(await identify(a, await photo(9100)), 'restored-0', 'a person written after the restore');
    t.equal(await identify(a, await photo(1013)), 'p-13');
  });
}
