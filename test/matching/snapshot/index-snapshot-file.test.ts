// The snapshot file itself: what a restore loads equals what was exported, row for row, whether it is
// unsealed natively (Collection.importSealed, the default where the process's OpenSSL is reachable) or in
// JavaScript (FACE_CHECK_SNAPSHOT_UNSEAL=js or where it is not: this thread or worker threads, one group or
// many), and both give exactly the same rows; the file holds neither a plain code row nor a person id; a
// flipped bit in any chunk makes the restore rebuild instead of loading garbage, on every path; an abandoned
// write leaves the previous snapshot whole and no temporary file; the scheduler writes what changed.
import fs from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import t from 'tap';

import { similarityIndex } from '../../../src/similarity-index/similarity-index';
import { Galleries } from '../../../src/matching/galleries';
import type { CodeDump, IndexGallery } from '../../../src/matching/index-gallery';
import { HEADER_PREFIX_BYTES, headerBlockLength } from '../../../src/matching/snapshot/format';
import { snapshotFileName, snapshotPlaceOf } from '../../../src/matching/snapshot/place';
import type { RestoreOptions } from '../../../src/matching/snapshot/restore';
import { SnapshotScheduler } from '../../../src/matching/snapshot/scheduler';
import { removeStaleTemps, SnapshotAbandoned, TEMP_MARK, writeSnapshot } from '../../../src/matching/snapshot/write';
import { openStore, type Store } from '../../../src/storage/lmdb/store';
import { tempDir } from '../../helpers/app';
import { FAKE_MODEL_ID, templateFor } from '../../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
const NOW = '2024-01-01T00:00:00.000Z';
const N = 10_000;  // three chunks of 4096 rows
const quiet = { info: () => undefined, warn: () => undefined };

/** The rows of a dump by key. */
function rowsByKey(d: CodeDump): Map<string, { codes: string; scale: number; sum: number }> {
  const out = new Map<string, { codes: string; scale: number; sum: number }>();
  d.keys.split('\0').forEach((key, i) => {
    out.set(key, { codes: Buffer.from(d.codes.subarray(i * d.stride, (i + 1) * d.stride)).toString('base64'), scale: d.scales[i], sum: d.sums[i] });
  });
  return out;
}

function scheduler(store: Store, galleries: Galleries, settings: Partial<{ minChanges: number; stopTimeoutS: number }> = {}): SnapshotScheduler {
  return new SnapshotScheduler({
    galleries, persons: store.persons, exclusive: store.exclusive, modelId: MODEL, place: snapshotPlaceOf(store), log: quiet,
    settings: { intervalS: 3600, minChanges: settings.minChanges ?? 1, stopTimeoutS: settings.stopTimeoutS ?? 60, changeLogKeep: 1_000_000 },
  });
}

t.test('a snapshot written and restored', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  await store.persons.createMany('acc', Array.from({ length: N }, (_, i) => ({ personId: `person-${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') })), NOW);
  const source = Galleries.forStore(store.persons);
  t.teardown(() => source.close());
  const first = await source.restore(store.persons, MODEL, snapshotPlaceOf(store));
  t.match(first.accounts, [{ accountId: 'acc', source: 'rebuild', reason: 'no snapshot', size: N }]);
  const written = await scheduler(store, source).writeNow('acc');
  t.match(written, { accountId: 'acc', count: N, seq: N });
  const exported = (await (source.of('acc') as IndexGallery).exportCodes())!;
  const expected = rowsByKey(exported);
  const file = path.join(snapshotPlaceOf(store).dir, snapshotFileName('acc'));
  const bytes = fs.readFileSync(file);

  t.test('it holds no plain code row and no person id', async (t) => {
    let found = 0;
    for (let i = 0; i < N; i += 97) {
      const row = exported.codes.subarray(i * exported.stride, i * exported.stride + 64);
      if (bytes.indexOf(row) >= 0) found++;
      if (bytes.indexOf(Buffer.from(`person-${i}`)) >= 0) found++;
    }
    t.equal(found, 0, 'none of 104 sampled code rows nor person ids appears in the file');
    t.ok(bytes.indexOf(Buffer.from('"accountId":"acc"')) > 0, 'the header names the account');
  });

  const native = similarityIndex().sealedImport.available;
  const modes: Array<[string, RestoreOptions]> = [
    ['natively, one thread', { unseal: 'native', threads: 1 }],
    ['natively, every core', { unseal: 'native' }],
    ['JavaScript, this thread, one group', { unseal: 'js', workers: 0 }],
    ['JavaScript, this thread, one chunk per group', { unseal: 'js', workers: 0, groupChunks: 1 }],
    ['JavaScript, two workers, one chunk per group', { unseal: 'js', workers: 2, poolAboveBytes: 0, groupChunks: 1 }],
    ['JavaScript, two workers, two chunks per group', { unseal: 'js', workers: 2, poolAboveBytes: 0, groupChunks: 2 }],
  ];
  for (const [what, options] of modes) {
    t.test(`restored (${what}): the same rows, from the snapshot`, { skip: options.unseal === 'native' && !native && 'native unsealing not available' }, async (t) => {
      const g = Galleries.forStore(store.persons);
      t.teardown(() => g.close());
      const report = await g.restore(store.persons, MODEL, snapshotPlaceOf(store), options);
      t.match(report.accounts, [{ accountId: 'acc', source: 'snapshot', replayed: 0, size: N }]);
      t.equal(report.unsealer, options.unseal);
      if (options.unseal === 'js') t.equal(report.workers, options.workers ?? 0);
      else t.ok(options.threads ? report.workers === options.threads : report.workers >= 1, `${report.workers} native threads`);
      const got = rowsByKey((await (g.of('acc') as IndexGallery).exportCodes())!);
      let differ = 0;
      for (const [key, row] of expected) {
        const other = got.get(key);
        if (!other || other.codes !== row.codes || other.scale !== row.scale || other.sum !== row.sum) differ++;
      }
      t.same([got.size, differ], [N, 0], 'every row equal');
      const hits = await g.of('acc').search(templateFor(1234, 3, 0.9), 1, 0.5);
      t.same(hits.map((h) => h.personId), ['person-1234'], 'identify by template');
    });
  }

  t.test('natively by default where available, and exactly the rows of the JavaScript path', async (t) => {
    const { available, reason } = similarityIndex().sealedImport;
    // Official Node builds link OpenSSL statically and export its symbols.
    if (!(process.config.variables as Record<string, unknown>).node_shared_openssl) t.ok(available, `available here (${reason})`);
    const byDefault = Galleries.forStore(store.persons);
    const inJs = Galleries.forStore(store.persons);
    t.teardown(() => { byDefault.close(); inJs.close(); });
    const saved = process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
    delete process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
    try {
      t.equal((await byDefault.restore(store.persons, MODEL, snapshotPlaceOf(store))).unsealer, available ? 'native' : 'js');
      // FACE_CHECK_SNAPSHOT_UNSEAL=js forces the JavaScript path (what a process without the symbols takes).
      process.env.FACE_CHECK_SNAPSHOT_UNSEAL = 'js';
      const report = await inJs.restore(store.persons, MODEL, snapshotPlaceOf(store), { workers: 0 });
      t.equal(report.unsealer, 'js');
    } finally {
      if (saved === undefined) delete process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
      else process.env.FACE_CHECK_SNAPSHOT_UNSEAL = saved;
    }
    const a = (await (byDefault.of('acc') as IndexGallery).exportCodes())!;
    const b = (await (inJs.of('acc') as IndexGallery).exportCodes())!;
    t.same([a.count, a.layout, a.stride], [b.count, b.layout, b.stride]);
    t.ok(a.keys === b.keys, 'the same keys in the same row order');
    t.ok(Buffer.from(a.codes).equals(Buffer.from(b.codes)), 'the same codes, byte for byte');
    t.ok(Buffer.from(a.scales.buffer, a.scales.byteOffset, a.scales.byteLength).equals(Buffer.from(b.scales.buffer, b.scales.byteOffset, b.scales.byteLength)), 'the same scales');
    t.ok(Buffer.from(a.sums.buffer, a.sums.byteOffset, a.sums.byteLength).equals(Buffer.from(b.sums.buffer, b.sums.byteOffset, b.sums.byteLength)), 'the same code sums');
  });

  const unsealers: Array<[string, RestoreOptions]> = [
    ['natively', { unseal: 'native' }],
    ['this thread', { unseal: 'js', workers: 0, groupChunks: 1 }],
    ['workers', { unseal: 'js', workers: 2, poolAboveBytes: 0, groupChunks: 1 }],
  ];
  const firstChunk = headerBlockLength(bytes.subarray(0, HEADER_PREFIX_BYTES));
  for (const [what, at] of [['the first chunk', firstChunk + 100], ['a middle chunk', Math.floor(bytes.length / 2)], ['the last tag', bytes.length - 3]] as const) {
    for (const [how, options] of unsealers) {
      t.test(`one bit flipped in ${what} (${how}): rebuilt, not loaded`, { skip: options.unseal === 'native' && !native && 'native unsealing not available' }, async (t) => {
        const damaged = Buffer.from(bytes);
        damaged[at] ^= 0x10;
        fs.writeFileSync(file, damaged);
        t.teardown(() => fs.writeFileSync(file, bytes));
        const g = Galleries.forStore(store.persons);
        t.teardown(() => g.close());
        const report = await g.restore(store.persons, MODEL, snapshotPlaceOf(store), options);
        t.equal(report.unsealer, options.unseal);
        t.match(report.accounts, [{ accountId: 'acc', source: 'rebuild', reason: /does not open/, size: N }]);
        const hits = await g.of('acc').search(templateFor(77, 3, 0.9), 1, 0.5);
        t.same(hits.map((h) => h.personId), ['person-77']);
      });
    }
  }

  t.test('an abandoned write leaves the previous snapshot and no temporary file', async (t) => {
    let chunks = 0;
    await t.rejects(writeSnapshot({
      dir: path.dirname(file), file: path.basename(file), accountId: 'acc', modelId: MODEL, seq: N, dump: exported,
      keyFor: snapshotPlaceOf(store).keyFor, abandoned: () => ++chunks > 2,
    }), SnapshotAbandoned);
    t.ok(fs.readFileSync(file).equals(bytes), 'the previous snapshot is untouched');
    t.same(fs.readdirSync(path.dirname(file)).filter((n) => n.includes(TEMP_MARK)), [], 'no temporary file');
    // A temporary file of a writer that died is removed; one of a live writer (this process) is kept.
    const dead = path.join(path.dirname(file), `x.snap${TEMP_MARK}999999999-abcd`);
    const live = path.join(path.dirname(file), `y.snap${TEMP_MARK}${process.pid}-abcd`);
    fs.writeFileSync(dead, 'x');
    fs.writeFileSync(live, 'x');
    removeStaleTemps(path.dirname(file));
    t.same([fs.existsSync(dead), fs.existsSync(live)], [false, true]);
    fs.rmSync(live);
  });
});

t.test('the scheduler writes the accounts that changed, and none at a stop without time', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  for (const account of ['a', 'b']) {
    await store.persons.createMany(account, Array.from({ length: 5 }, (_, i) => ({ personId: `${account}${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') })), NOW);
  }
  const galleries = Galleries.forStore(store.persons);
  t.teardown(() => galleries.close());
  const place = snapshotPlaceOf(store);
  const s = scheduler(store, galleries, { minChanges: 3 });
  s.begin(await galleries.restore(store.persons, MODEL, place));
  const fileOf = (a: string) => path.join(place.dir, snapshotFileName(a));
  await s.writeNow('a');  // begin() queued both rebuilt accounts: wait until the queue has run
  t.ok(fs.existsSync(fileOf('a')) && fs.existsSync(fileOf('b')), 'both rebuilt accounts written after the start');

  const mtime = (a: string) => fs.statSync(fileOf(a)).mtimeMs;
  const before = { a: mtime('a'), b: mtime('b') };
  // Two changes of a (below 3), three of b; each under the account lock, gallery updated after the commit.
  const change = (account: string, id: string, seed: number) => store.exclusive(account, async () => {
    await store.persons.create(account, id, { modelId: MODEL, template: templateFor(seed, 0, 1), referenceImage: Buffer.from('i') }, NOW);
    await galleries.of(account).upsert(id, templateFor(seed, 0, 1));
  });
  await change('a', 'a-new1', 100);
  await change('a', 'a-new2', 101);
  for (let i = 0; i < 3; i++) await change('b', `b-new${i}`, 200 + i);
  const written = await s.tick();
  t.same(written.map((w) => w.accountId), ['b'], 'only the account with enough changes');
  t.equal(mtime('a'), before.a);
  t.not(mtime('b'), before.b);

  // All of a's persons removed: its snapshot goes.
  for (const id of ['a0', 'a1', 'a2', 'a3', 'a4', 'a-new1', 'a-new2']) {
    await store.exclusive('a', async () => { await store.persons.remove('a', id); await galleries.of('a').remove(id); });
  }
  await s.tick();
  t.notOk(fs.existsSync(fileOf('a')), 'an account with nobody left has no snapshot');

  await change('b', 'b-last', 300);
  const stopNow = scheduler(store, galleries, { stopTimeoutS: 0 });
  stopNow.begin({ loaded: 0, stale: 0, accounts: [{ accountId: 'b', source: 'snapshot', seq: store.changes.lastChange() - 1, replayed: 0, size: 9 }], timings: {} as never, bytes: 0, workers: 0, unsealer: 'js' });
  const bBefore = mtime('b');
  t.same(await stopNow.stop(), [], 'snapshot_stop_timeout_s = 0 writes nothing at the stop');
  t.equal(mtime('b'), bBefore);
  t.same((await s.stop()).map((w) => w.accountId), ['b'], 'a stop with time writes the changed account');
  const g2 = Galleries.forStore(store.persons);
  t.teardown(() => g2.close());
  t.match((await g2.restore(store.persons, MODEL, place)).accounts, [{ accountId: 'b', source: 'snapshot', replayed: 0, size: 9 }]);
});

t.test('a store whose change at the snapshot\'s sequence differs (an older copy written to since) is rebuilt', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  await store.persons.createMany('acc', Array.from({ length: 20 }, (_, i) => ({ personId: `p${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') })), NOW);
  const g = Galleries.forStore(store.persons);
  await g.restore(store.persons, MODEL, snapshotPlaceOf(store));
  t.match(await scheduler(store, g).writeNow('acc'), { seq: 20 });
  g.close();
  await store.close();

  // Same sequence number, another history: entry 20 names someone else.
  const env = open({ path: dir, compression: false, maxDbs: 32 });
  await env.openDB<[string, string], number>({ name: 'changes' }).put(20, ['acc', 'someone-else']);
  await env.close();
  store = await openStore(dir);
  t.teardown(() => store.close());
  const g2 = Galleries.forStore(store.persons);
  t.teardown(() => g2.close());
  t.match((await g2.restore(store.persons, MODEL, snapshotPlaceOf(store))).accounts,
    [{ accountId: 'acc', source: 'rebuild', reason: /not the snapshot's/, size: 20 }]);
});

t.test('more changes since the snapshot than are worth replaying: the account is rebuilt, complete', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const person = (i: number) => ({ personId: `p${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') });
  await store.persons.createMany('acc', Array.from({ length: 10 }, (_, i) => person(i)), NOW);
  const g = Galleries.forStore(store.persons);
  t.teardown(() => g.close());
  await g.restore(store.persons, MODEL, snapshotPlaceOf(store));
  await scheduler(store, g).writeNow('acc');
  await store.persons.createMany('acc', Array.from({ length: 5000 }, (_, i) => person(10 + i)), NOW);  // a bulk import
  const report = await g.restore(store.persons, MODEL, snapshotPlaceOf(store));
  t.match(report.accounts, [{ accountId: 'acc', source: 'rebuild', reason: '5000 persons changed since the snapshot', size: 5010 }]);
  t.same((await g.of('acc').search(templateFor(4321, 3, 0.9), 1, 0.5)).map((h) => h.personId), ['p4321']);
});
