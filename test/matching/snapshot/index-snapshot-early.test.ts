// Snapshots imported before the store opens (src/matching/snapshot/early-import.ts): the restore uses such an
// import only for the very file it checked, opened with the key the store itself derives for it, and then
// holds exactly the rows of an ordinary restore; an import of a file of another store (same key file, same
// history, another data key), of a file replaced meanwhile, of a snapshot without a key wrap or under another
// key file is never used; whatever is not taken is freed; a damaged chunk fails as it does without.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { loadConfig } from '../../../src/config/load';
import { similarityIndex } from '../../../src/similarity-index/similarity-index';
import { Galleries } from '../../../src/matching/galleries';
import type { CodeDump, IndexGallery } from '../../../src/matching/index-gallery';
import { beginSnapshotStart, EarlySnapshotImports } from '../../../src/matching/snapshot/early-import';
import { parseHeader, headerBlockLength, HEADER_PREFIX_BYTES } from '../../../src/matching/snapshot/format';
import { snapshotFileName, snapshotPlaceOf } from '../../../src/matching/snapshot/place';
import { stopSnapshotReadAhead } from '../../../src/matching/snapshot/read-ahead';
import { beginEarlySnapshots, snapshotImportsForStart } from '../../../src/start/early-start';
import { SnapshotScheduler } from '../../../src/matching/snapshot/scheduler';
import { openStore, type Store } from '../../../src/storage/lmdb/store';
import { tempDir } from '../../helpers/app';
import { FAKE_MODEL_ID, templateFor } from '../../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
const NOW = '2024-01-01T00:00:00.000Z';
const N = 9_000;  // three chunks
const quiet = { info: () => undefined, warn: () => undefined };
const native = similarityIndex().sealedImport.available;

function rows(d: CodeDump): string[] {
  return d.keys.split('\0').map((key, i) => `${key}:${Buffer.from(d.codes.subarray(i * d.stride, (i + 1) * d.stride)).toString('base64')}:${d.scales[i]}:${d.sums[i]}`).sort();
}

/** A store of N persons of account "acc" (templates of `seed`) with its snapshot written, as a service leaves it. */
async function storeWithSnapshot(dir: string, options: { keyFile?: string; seed?: number } = {}): Promise<{ store: Store; exported: string[] }> {
  const store = await openStore(dir, { keyFile: options.keyFile });
  await store.persons.createMany('acc', Array.from({ length: N }, (_, i) => ({
    personId: `person-${i}`, modelId: MODEL, template: templateFor(i + (options.seed ?? 0) * 100_000, 0, 1), referenceImage: Buffer.from('i'),
  })), NOW);
  const galleries = Galleries.forStore(store.persons);
  await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store));
  await new SnapshotScheduler({
    galleries, persons: store.persons, exclusive: store.exclusive, modelId: MODEL, place: snapshotPlaceOf(store), log: quiet,
    settings: { intervalS: 3600, minChanges: 1, stopTimeoutS: 60, changeLogKeep: 1_000_000 },
  }).writeNow('acc');
  const exported = rows((await (galleries.of('acc') as IndexGallery).exportCodes())!);
  galleries.close();
  return { store, exported };
}

const snapshotFile = (dir: string) => path.join(dir, 'index-snapshots', snapshotFileName('acc'));
const keyFileOf = (dir: string) => path.join(dir, 'face-check.key');
const earlyCollections = () => similarityIndex().collectionNames().filter((n) => n.startsWith('early-snapshot/'));

function headerOf(file: string) {
  const bytes = fs.readFileSync(file);
  return parseHeader(bytes.subarray(0, headerBlockLength(bytes.subarray(0, HEADER_PREFIX_BYTES))), bytes.length).header;
}

t.test('early imports', { skip: native ? false : 'native unsealing is not available in this process' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { store, exported } = await storeWithSnapshot(path.join(dir, 'a'));
  t.teardown(() => store.close());
  const file = snapshotFile(store.path);

  t.test('the header carries the store\'s wrapped data key, which opens nothing without the key file', async (t) => {
    const header = headerOf(file);
    t.equal(header.keyWrap, Buffer.from(store.dataKeyWrap()!).toString('base64'));
  });

  t.test('an import begun before the restore is what the restore uses: the same rows as without', async (t) => {
    const early = beginSnapshotStart(store.path, keyFileOf(store.path), MODEL);
    stopSnapshotReadAhead();
    t.equal(early.size, 1, 'begun for the one snapshot');
    t.equal(early.skipped, undefined);
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'snapshot', early: true, size: N }]);
    t.same(rows((await (galleries.of('acc') as IndexGallery).exportCodes())!), exported, 'row for row the exported rows');
    const hits = await galleries.of('acc').search(templateFor(77, 0, 1), 1, 0.5);
    t.equal(hits[0]?.personId, 'person-77');
    t.equal(similarityIndex().collectionNames().filter((n) => n.endsWith('/acc')).length, 1, 'the import became the gallery\'s own collection: no other is left');
    galleries.close();
    t.same(similarityIndex().collectionNames().filter((n) => n.includes('/acc')), [], 'and the gallery frees it');
  });

  t.test('a restore without snapshots (or of another account) frees what was begun', async (t) => {
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: keyFileOf(store.path), modelId: MODEL });
    t.equal(early.size, 1);
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    const report = await galleries.restore(store.persons, MODEL, undefined, { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'rebuild', reason: 'snapshots off' }]);
    t.equal(report.accounts[0].early, undefined);
    t.equal(early.size, 0);
    t.same(earlyCollections(), [], 'freed');
  });

  t.test('another key file opens no wrap: nothing begun, the restore reads the file itself', async (t) => {
    const other = path.join(dir, 'other.key');
    fs.writeFileSync(other, Buffer.alloc(32, 7), { mode: 0o600 });
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: other, modelId: MODEL });
    t.equal(early.size, 0);
    t.match(early.skipped, /no snapshot with a key wrap the key file opens/);
    const missing = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: path.join(dir, 'none.key'), modelId: MODEL });
    t.equal(missing.skipped, 'no key file');
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'snapshot', size: N }]);
    t.equal(report.accounts[0].early, undefined, 'read after the store opened');
  });

  t.test('another model\'s snapshot is not begun', async (t) => {
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: keyFileOf(store.path), modelId: `previous-${MODEL}` });
    t.equal(early.size, 0);
  });

  t.test('a snapshot replaced after its import began: the import is freed, the new file read', async (t) => {
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: keyFileOf(store.path), modelId: MODEL });
    t.equal(early.size, 1);
    const copy = `${file}.copy`;
    fs.copyFileSync(file, copy);
    fs.renameSync(copy, file);  // the same bytes, another inode
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'snapshot', size: N }]);
    t.equal(report.accounts[0].early, undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.same(earlyCollections(), [], 'the import of the replaced file is freed');
  });

  t.test('a damaged chunk: the early import fails as the restore\'s own would, and the account is rebuilt', async (t) => {
    const saved = fs.readFileSync(file);
    t.teardown(() => fs.writeFileSync(file, saved));
    const damaged = Buffer.from(saved);
    damaged[damaged.length - 5000] ^= 1;
    fs.writeFileSync(file, damaged);
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: keyFileOf(store.path), modelId: MODEL });
    t.equal(early.size, 1);
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'rebuild', reason: /chunk does not open/, size: N }]);
    t.same(earlyCollections(), []);
  });

  t.test('serve\'s early start: begun for an LMDB store with snapshots on, handed to the start of that store once', async (t) => {
    const ini = (extra: string) => {
      const file = path.join(dir, `serve-${Math.random().toString(36).slice(2)}.ini`);
      fs.writeFileSync(file, `[server]\nport = 0\n[storage]\npath = ${store.path}\n${extra}\n`);
      return loadConfig(file);
    };
    beginEarlySnapshots(ini(''));
    const imports = snapshotImportsForStart(store.path);
    t.equal(imports?.size, 1, 'the snapshot\'s import, for the start of this store');
    t.equal(snapshotImportsForStart(store.path), undefined, 'handed out once');
    await imports!.discardRest();
    beginEarlySnapshots(ini(''));
    t.equal(snapshotImportsForStart(path.join(dir, 'another-store')), undefined, 'not for another store');
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.same(earlyCollections(), [], 'and that one freed');
    beginEarlySnapshots(ini('[index]\nsnapshot = false'));
    t.equal(snapshotImportsForStart(store.path), undefined, 'nothing with snapshots off');
    t.same(earlyCollections(), []);
  });

  t.test('a snapshot written without a key wrap (by an earlier version) begins nothing early and is read after the store opens', async (t) => {
    const saved = fs.readFileSync(file);
    t.teardown(() => fs.writeFileSync(file, saved));
    const galleries = Galleries.forStore(store.persons);
    t.teardown(() => galleries.close());
    await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store));
    const { keyWrap: _omitted, ...withoutWrap } = snapshotPlaceOf(store);
    await new SnapshotScheduler({
      galleries, persons: store.persons, exclusive: store.exclusive, modelId: MODEL, place: withoutWrap, log: quiet,
      settings: { intervalS: 3600, minChanges: 1, stopTimeoutS: 60, changeLogKeep: 1_000_000 },
    }).writeNow('acc');
    t.equal(headerOf(file).keyWrap, undefined);
    const early = EarlySnapshotImports.begin({ dir: path.dirname(file), keyFile: keyFileOf(store.path), modelId: MODEL });
    t.equal(early.size, 0);
    t.match(early.skipped, /no snapshot with a key wrap/);
    const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
    t.match(report.accounts, [{ accountId: 'acc', source: 'snapshot', size: N }]);
    t.equal(report.accounts[0].early, undefined);
    t.equal(EarlySnapshotImports.begin({ dir: path.join(dir, 'nowhere'), keyFile: keyFileOf(store.path), modelId: MODEL }).skipped, undefined,
      'no snapshot folder: nothing to say');
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(empty);
    t.equal(EarlySnapshotImports.begin({ dir: empty, keyFile: keyFileOf(store.path), modelId: MODEL }).skipped, undefined,
      'an empty folder: nothing to say');
  });
});

t.test('at most maxImports snapshots are begun early, the largest; the others are read after the store opens', { skip: native ? false : 'native unsealing is not available' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(dir);
  t.teardown(() => store.close());
  const sizes = { small: 10, large: 300, middle: 100 };
  const galleries = Galleries.forStore(store.persons);
  t.teardown(() => galleries.close());
  for (const [account, n] of Object.entries(sizes)) {
    await store.persons.createMany(account, Array.from({ length: n }, (_, i) => ({
      personId: `p${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i'),
    })), NOW);
  }
  await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store));
  const scheduler = new SnapshotScheduler({
    galleries, persons: store.persons, exclusive: store.exclusive, modelId: MODEL, place: snapshotPlaceOf(store), log: quiet,
    settings: { intervalS: 3600, minChanges: 1, stopTimeoutS: 60, changeLogKeep: 1_000_000 },
  });
  for (const account of Object.keys(sizes)) await scheduler.writeNow(account);
  const early = EarlySnapshotImports.begin({ dir: snapshotPlaceOf(store).dir, keyFile: keyFileOf(dir), modelId: MODEL, maxImports: 2 });
  t.equal(early.size, 2);
  const report = await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store), { early });
  const byAccount = Object.fromEntries(report.accounts.map((a) => [a.accountId, { source: a.source, early: a.early ?? false, size: a.size }]));
  t.same(byAccount, {
    large: { source: 'snapshot', early: true, size: 300 },
    middle: { source: 'snapshot', early: true, size: 100 },
    small: { source: 'snapshot', early: false, size: 10 },
  });
  t.same(earlyCollections().map((n) => n.split('/').pop()).sort(), ['large', 'middle'], 'the two begun early are the galleries\' own; nothing was begun for the smallest');
});

t.test('a snapshot of another store with the same key file and the same history is never used early', { skip: native ? false : 'native unsealing is not available' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const keyFile = path.join(dir, 'shared.key');
  const a = await storeWithSnapshot(path.join(dir, 'a'), { keyFile, seed: 0 });
  t.teardown(() => a.store.close());
  const b = await storeWithSnapshot(path.join(dir, 'b'), { keyFile, seed: 1 });
  t.teardown(() => b.store.close());
  t.notSame(a.store.dataKeyWrap(), b.store.dataKeyWrap(), 'two data keys');
  // B's snapshot in A's folder: it passes every check against A's store (same account, model, sequence and
  // change at that sequence) and B's wrap opens with the shared key file.
  fs.copyFileSync(snapshotFile(b.store.path), snapshotFile(a.store.path));
  const early = EarlySnapshotImports.begin({ dir: path.dirname(snapshotFile(a.store.path)), keyFile, modelId: MODEL });
  t.equal(early.size, 1, 'begun: the key file opens B\'s wrap');
  const galleries = Galleries.forStore(a.store.persons);
  t.teardown(() => galleries.close());
  const report = await galleries.restore(a.store.persons, MODEL, snapshotPlaceOf(a.store), { early });
  t.match(report.accounts, [{ accountId: 'acc', source: 'rebuild', reason: /chunk does not open/, size: N }],
    'not taken (opened with another data key\'s file key); read with A\'s key, it does not open, so A is rebuilt');
  t.equal(report.accounts[0].early, undefined);
  const hits = await galleries.of('acc').search(templateFor(5, 0, 1), 1, 0.5);
  t.equal(hits[0]?.personId, 'person-5', 'A\'s own templates');
  t.same(earlyCollections(), []);
});
