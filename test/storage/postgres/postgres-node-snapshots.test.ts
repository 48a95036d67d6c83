// A PostgreSQL node's index snapshots, through real node processes over one database: an orderly stop writes
// the galleries' int8 codes beside the gallery cache (sealed; no person id readable in them) and a set file
// naming the cache's state; the next start imports them instead of the cache's rows and replays the log from
// there (writes made meanwhile answer as the database holds them, near twins still told apart by the exact
// re-rank); the set is gone once a start read it. A node killed, a set of another state, a damaged file or
// `[index] snapshot = false` start from the cache's rows, with the same answers.
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { GALLERY_CACHE_DIR } from '../../../src/storage/postgres/gallery-cache';
import { NODE_SNAPSHOT_FOLDER, SNAPSHOT_SET } from '../../../src/matching/snapshot/node-snapshots';
import { FAKE_MODEL_ID, fakePhotoB64, templateFor } from '../../helpers/fake-engine';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';
import { identifyAnswer as identify, request, startServiceProcess, until, writePostgresNodeIni, type ServiceProcess } from '../../helpers/service-process';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const ACCOUNT = 'default';  // the bootstrap key's account
const PRELOADED = 300;

function nodeIni(dir: string, name: string, url: string, keyFile: string, snapshot = true): string {
  return writePostgresNodeIni(dir, `${name}${snapshot ? '' : '-no-snapshots'}.ini`,
    { name, url, keyFile, storage: ['gallery_cache = true'], extra: ['[index]', `snapshot = ${snapshot}`] });
}

const photo = async (identity: number, variant = 0, cosine = 1) => ({ faceImage: await fakePhotoB64({ identity, variant, cosine }) });

/** The node's "galleries loaded" log line. */
function loaded(node: ServiceProcess): { gallery_cache?: string; index_snapshots?: string; persons?: number } {
  const line = node.output().split('\n').find((l) => l.includes('galleries loaded'));
  return line ? JSON.parse(line) : {};
}

async function run(): Promise<void> {
  const { pg, dir, keyFile } = await postgresCluster(t);
  const url = await pg.createDatabase('node_snapshots');
  const admin: PostgresStore = await openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile });
  t.teardown(() => admin.close());
  // Every tenth person has a near twin (cosine 0.97): the int8 codes alone could pick the wrong one of a pair.
  const persons = Array.from({ length: PRELOADED }, (_, i) => ({
    personId: `p-${i}`, modelId: FAKE_MODEL_ID, referenceImage: Buffer.from('x'),
    template: i % 10 === 9 ? templateFor(1000 + i - 1, 7, 0.97) : templateFor(1000 + i, 0, 1),
  }));
  await admin.persons.createMany(ACCOUNT, persons, new Date().toISOString());
  // A second account, so the set names more than one file.
  await admin.persons.createMany('second', [{ personId: 'q-0', modelId: FAKE_MODEL_ID, referenceImage: Buffer.from('x'), template: templateFor(3000, 0, 1) }],
    new Date().toISOString());

  const aIni = nodeIni(dir, 'a', url, keyFile);
  let a = await startServiceProcess(aIni, 'fake');
  const b = await startServiceProcess(nodeIni(dir, 'b', url, keyFile), 'fake');
  t.teardown(async () => { await a.stop(); await b.stop(); });
  const snapDir = path.join(dir, 'a', GALLERY_CACHE_DIR, NODE_SNAPSHOT_FOLDER);
  const setFile = path.join(snapDir, SNAPSHOT_SET);

  /** The answers a node must give whatever it started from: persons, near twins and strangers. */
  const checkAnswers = async (t: Test, node: ServiceProcess) => {
    for (const i of [0, 3, 17, 123, 250]) t.equal(await identify(node, await photo(1000 + i, 3, 0.9)), `p-${i}`, `p-${i}`);
    t.equal(await identify(node, await photo(1000 + 18, 0, 1)), 'p-18', 'a near twin: its own face');
    t.equal(await identify(node, await photo(1000 + 18, 7, 0.97)), 'p-19', 'the other twin');
    t.match(await identify(node, await photo(90_001)), /^410/, 'a stranger');
  };

  await t.test('an orderly stop writes the snapshots and their set; no person id is readable in them', async (t) => {
    t.equal(loaded(a).gallery_cache, 'database', 'the first start fills the cache from the table');
    t.equal(loaded(a).index_snapshots, undefined, 'no snapshots were there to try');
    t.equal(await a.stop(), 0);
    t.match(a.output(), /index snapshots written for the next start/);
    const set = JSON.parse(fs.readFileSync(setFile, 'utf8'));
    t.equal(set.files.length, 2, 'one file per account');
    t.equal(set.files.reduce((n: number, f: { persons: number }) => n + f.persons, 0), PRELOADED + 1, 'every person');
    t.equal(set.position, await admin.changes.lastChange(), 'at the log\'s last change');
    for (const name of fs.readdirSync(snapDir)) {
      const bytes = fs.readFileSync(path.join(snapDir, name));
      // p-123: a person in the codes; q-0: the last change, which the set stands at.
      t.notOk(bytes.includes('p-123') || bytes.includes('q-0'), `${name} holds no person id in the clear`);
      t.equal(fs.statSync(path.join(snapDir, name)).mode & 0o077, 0, `${name} is private to the service's user`);
    }
  });

  await t.test('the next start imports them and replays the log written meanwhile', async (t) => {
    // While A is down: B adds one, replaces one's face with another identity's, removes one.
    t.equal((await request(b.address, 'POST', '/person/face/while-away', await photo(6001))).status, 200);
    t.equal((await request(b.address, 'PUT', '/person/face/p-1', await photo(6002))).status, 200);
    t.equal((await request(b.address, 'DELETE', '/person/face/p-2')).status, 200);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(loaded(a).index_snapshots, 'used');
    t.equal(loaded(a).gallery_cache, 'cache', 'the cache stays the position followed from');
    t.notOk(fs.existsSync(setFile), 'the set is gone once read');
    // The first answers, with no wait: the follower replayed the log since the snapshots before the node served.
    t.equal(await identify(a, await photo(6001)), 'while-away', 'added meanwhile');
    t.equal(await identify(a, await photo(6002)), 'p-1', 'updated meanwhile: its new face');
    t.not(await identify(a, await photo(1001)), 'p-1', 'and not its old one');
    t.not(await identify(a, await photo(1002)), 'p-2', 'removed meanwhile: never matched');
    t.equal((await request(a.address, 'POST', '/person/recognize-face', { ...(await photo(3000)) })).status, 410,
      'another account\'s person is not this key\'s');
    await checkAnswers(t, a);
  });

  await t.test('a node killed starts from the cache\'s rows (no set), with the same answers', async (t) => {
    t.equal((await request(b.address, 'POST', '/person/face/while-up', await photo(6003))).status, 200);
    t.ok(await until(5_000, async () => (await identify(a, await photo(6003))) === 'while-up'), 'followed');
    await a.kill9();
    a = await startServiceProcess(aIni, 'fake');
    t.match(loaded(a).index_snapshots, /no snapshots/);
    t.equal(loaded(a).gallery_cache, 'cache');
    t.equal(await identify(a, await photo(6003)), 'while-up');
    await checkAnswers(t, a);
  });

  await t.test('a set of a state the cache has left is not used', async (t) => {
    t.equal(await a.stop(), 0);
    const old = fs.readFileSync(setFile);
    a = await startServiceProcess(aIni, 'fake');
    t.equal(loaded(a).index_snapshots, 'used');
    // The cache moves on; then the node dies, and an old set (as a backup of the folder would bring) is back.
    t.equal((await request(b.address, 'DELETE', '/person/face/p-4')).status, 200);
    t.equal((await request(b.address, 'POST', '/person/face/later', await photo(6004))).status, 200);
    t.ok(await until(5_000, async () => (await identify(a, await photo(6004))) === 'later'), 'followed');
    await a.kill9();
    fs.writeFileSync(setFile, old, { mode: 0o600 });
    a = await startServiceProcess(aIni, 'fake');
    t.match(loaded(a).index_snapshots, /^snapshots at change \d+, the gallery cache stands at \d+$/);
    t.not(await identify(a, await photo(1004)), 'p-4', 'removed after the set: never matched');
    t.equal(await identify(a, await photo(6004)), 'later');
    await checkAnswers(t, a);
  });

  await t.test('a damaged snapshot file: the start reads the cache\'s rows instead', async (t) => {
    t.equal(await a.stop(), 0);
    const set = JSON.parse(fs.readFileSync(setFile, 'utf8'));
    const big = set.files.find((f: { persons: number }) => f.persons > 1).file;
    const file = path.join(snapDir, big);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 100] ^= 1;
    fs.writeFileSync(file, bytes);
    a = await startServiceProcess(aIni, 'fake');
    t.match(loaded(a).index_snapshots, /does not open/);
    t.equal(loaded(a).persons, PRELOADED + 1 + 3 - 2, 'every person of the model, from the rows');
    await checkAnswers(t, a);
  });

  await t.test('with [index] snapshot = false a stop writes none and a start reads the rows', async (t) => {
    t.equal(await a.stop(), 0);
    t.ok(fs.existsSync(setFile), 'the stop with snapshots on wrote a set');
    a = await startServiceProcess(nodeIni(dir, 'a', url, keyFile, false), 'fake');
    t.equal(loaded(a).index_snapshots, undefined, 'not tried');
    t.notOk(fs.existsSync(setFile), 'and the set it would have trusted is forgotten');
    t.same(fs.readdirSync(snapDir), [], 'with the files');
    await checkAnswers(t, a);
    t.equal(await a.stop(), 0);
    t.notOk(fs.existsSync(setFile), 'none written');
    a = await startServiceProcess(aIni, 'fake');
  });
}
