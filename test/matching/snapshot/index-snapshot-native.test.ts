// Collection.importSealed: a sealed snapshot file read and opened natively (the process's own OpenSSL,
// looked up at run time) straight into a collection. The rows it loads are exactly the exported ones, on any
// number of threads and whether the index's chunks of rows line up with the file's chunks or not; whatever
// is wrong with the file (a flipped bit, another key, chunks in another order, sizes that differ from the
// header, a file cut short, a descriptor that cannot be read) or with its rows (a bad code row, a repeated
// key, under a valid tag) rejects, says why, and leaves the collection exactly as it was.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';

import { IndexError, type CodeDump, type Collection, type SealedJob } from '../../../src/similarity-index/similarity-index';
import { chunkAad, chunkNonce, TAG_BYTES } from '../../../src/matching/snapshot/format';
import { closeSnapshot, openSnapshot, sealedJob, type OpenSnapshot } from '../../../src/matching/snapshot/read';
import { writeSnapshot } from '../../../src/matching/snapshot/write';
import { tempDir } from '../../helpers/app';
import { newIndex, randomVectors } from '../../helpers/index-addon';

const ix = newIndex();
const N = 10_000;  // three chunks of 4096 rows in the file

function keysOf(n: number, prefix: string): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

async function collectionOf(name: string, dim: number, n: number, seed: number, prefix = 'p'): Promise<Collection> {
  ix.dropCollection(name);
  const c = ix.createCollection(name, dim, { vectors: false });
  if (n > 0) await c.bulkLoad(randomVectors(n, dim, seed), keysOf(n, prefix), { clear: true });
  return c;
}

/** The collection's rows as comparable strings (row order included). */
async function rowsOf(c: Collection): Promise<{ count: number; keys: string; codes: string; scales: string; sums: string }> {
  const d = await c.exportCodes();
  const hash = (a: ArrayBufferView) => crypto.createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex');
  return { count: d.count, keys: hash(Buffer.from(d.keys)), codes: hash(d.codes), scales: hash(d.scales), sums: hash(d.sums) };
}

const dir = tempDir();
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
const key = crypto.createSecretKey(crypto.randomBytes(32));
const keyBytes = () => new Uint8Array(key.export());
/** Tests skipped where the process has no usable OpenSSL (another Node build). */
const skip = ix.sealedImport.available ? false : `native unsealing not available: ${ix.sealedImport.reason}`;

/** Writes `dump` as a snapshot file (as the scheduler does) and opens it. */
async function snapshotOf(dump: CodeDump, file: string): Promise<OpenSnapshot> {
  await writeSnapshot({ dir, file, accountId: 'acc', modelId: 'model', seq: 1, dump, keyFor: () => key });
  return openSnapshot(path.join(dir, file))!;
}

async function rejectsWith(t: Test, p: Promise<unknown>, expected: { reason?: string; message: RegExp }, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: loaded`);
  } catch (err) {
    t.ok(err instanceof IndexError, `${what}: an IndexError`);
    t.same([(err as IndexError).reason, (err as IndexError).code], [expected.reason, 'ERR_INDEX_BAD_ARGUMENT'], `${what}: reason`);
    t.match((err as Error).message, expected.message, `${what}: message`);
  }
}

t.test('available in this node', async (t) => {
  const { available, reason } = ix.sealedImport;
  // Official Node builds link OpenSSL statically and export its symbols (the x64 and arm64 ones alike).
  const staticOpenssl = !(process.config.variables as Record<string, unknown>).node_shared_openssl;
  if (staticOpenssl) t.ok(available, `available (${reason})`);
  else t.pass(`node with a shared OpenSSL: ${available ? 'available' : reason}`);
});

for (const dim of [100, 704, 1000]) {
  // Index chunks of 4096 rows (stride 128), 2978 (704: a file chunk spans two or three of them), 2048 (1024).
  t.test(`dim ${dim}: the rows of the file, exactly`, { skip }, async (t) => {
    const src = await collectionOf(`sealed-src-${dim}`, dim, N, dim);
    t.teardown(() => ix.dropCollection(`sealed-src-${dim}`));
    for (const k of ['p-00003', 'p-05000']) await src.remove(k);  // row order is not insertion order
    const dump = await src.exportCodes();
    const snapshot = await snapshotOf(dump, `dim${dim}.snap`);
    t.teardown(() => closeSnapshot(snapshot));
    const expected = await rowsOf(src);
    for (const threads of [1, 2, 3, 0]) {
      const dst = await collectionOf(`sealed-dst-${dim}`, dim, 50, 9, 'old');
      const r = await dst.importSealed(sealedJob(snapshot, keyBytes()), { threads });
      t.match(r, { added: N - 2 }, `${threads} threads: rows added`);
      t.equal(r.threads, threads ? Math.min(threads, snapshot.header.chunks.length) : Math.max(1, r.threads), `${threads} threads: threads used`);
      t.same(await rowsOf(dst), expected, `${threads} threads: every row, in order (the previous rows replaced)`);
      const q = randomVectors(1, dim, 77);
      t.same(await dst.search(q, { k: 5 }), await src.search(q, { k: 5 }), `${threads} threads: the same search`);
    }
    ix.dropCollection(`sealed-dst-${dim}`);
  });
}

t.test('an empty snapshot empties the collection', { skip }, async (t) => {
  const empty = await (await collectionOf('sealed-empty', 100, 0, 1)).exportCodes();
  const snapshot = await snapshotOf(empty, 'empty.snap');
  t.teardown(() => closeSnapshot(snapshot));
  const c = await collectionOf('sealed-empty-dst', 100, 20, 2);
  t.match(await c.importSealed(sealedJob(snapshot, keyBytes())), { added: 0 });
  t.equal(c.size, 0);
  ix.dropCollection('sealed-empty');
  ix.dropCollection('sealed-empty-dst');
});

t.test('a defect of the file or of its rows rejects and changes nothing', { skip }, async (t) => {
  const dim = 704;
  const src = await collectionOf('sealed-defect-src', dim, N, 5);
  const dump = await src.exportCodes();
  ix.dropCollection('sealed-defect-src');
  const snapshot = await snapshotOf(dump, 'defects.snap');
  const file = path.join(dir, 'defects.snap');
  const good = fs.readFileSync(file);
  t.teardown(() => closeSnapshot(snapshot));
  const target = await collectionOf('sealed-defect-dst', dim, 300, 6, 'kept');
  t.teardown(() => ix.dropCollection('sealed-defect-dst'));
  const before = await rowsOf(target);
  const job = () => sealedJob(snapshot, keyBytes());
  const folderFd = fs.openSync(dir, 'r');
  t.teardown(() => fs.closeSync(folderFd));
  const unchanged = async (what: string) => t.same(await rowsOf(target), before, `${what}: the collection is unchanged`);

  const cases: Array<[string, () => SealedJob | Promise<SealedJob>, { reason?: string; message: RegExp }]> = [
    ['another key', () => ({ ...job(), key: crypto.randomBytes(32) }), { reason: 'open', message: /does not open/ }],
    ['the first two chunks swapped', () => {
      const j = job();
      const [a, b] = [j.chunks[0], j.chunks[1]];
      j.chunks[0] = { ...a, offset: b.offset, length: b.length };
      j.chunks[1] = { ...b, offset: a.offset, length: a.length };
      return j;
    }, { reason: 'open', message: /does not open/ }],
    ['the last chunk left out', () => {
      const j = job();
      j.chunks.pop();
      return j;
    }, { reason: 'format', message: /row count differ/ }],
    ['a chunk said to hold one row less', () => {
      const j = job();
      j.chunks[2] = { ...j.chunks[2], rows: j.chunks[2].rows - 1 };
      return { ...j, count: j.count - 1 };
    }, { reason: 'format', message: /does not match its header/ }],
    ['a row count beyond the chunks', () => ({ ...job(), count: N + 1 }), { reason: 'format', message: /row count differ/ }],
    ['a chunk shorter than its rows', () => {
      const j = job();
      j.chunks[0] = { ...j.chunks[0], length: 100 };
      return j;
    }, { reason: 'format', message: /does not match its header/ }],
    ['the file cut short under the reader', () => {
      const j = job();
      const last = j.chunks[j.chunks.length - 1];
      j.chunks[j.chunks.length - 1] = { ...last, length: last.length + 4096 };  // reads past the end
      return j;
    }, { reason: 'cut', message: /cut short/ }],
    ['a descriptor that cannot be read', () => ({ ...job(), fd: folderFd }), { reason: 'read', message: /cannot be read/ }],
    ['the nonce of another chunk', () => {
      const j = job();
      j.chunks[1] = { ...j.chunks[1], nonce: chunkNonce(0) };
      return j;
    }, { reason: 'open', message: /does not open/ }],
    ['the additional data of a header not the last', () => {
      const j = job();
      const n = j.chunks.length;
      j.chunks[n - 1] = { ...j.chunks[n - 1], aad: chunkAad(snapshot.block, n - 1, false) };
      return j;
    }, { reason: 'open', message: /does not open/ }],
  ];
  for (const [what, make, expected] of cases) {
    const j = await make();
    await rejectsWith(t, target.importSealed(j), expected, what);
    await unchanged(what);
  }
  for (const at of [snapshot.offsets[0] + 3, snapshot.offsets[1] + 200_000, snapshot.offsets[3] - TAG_BYTES + 5]) {
    const damaged = Buffer.from(good);
    damaged[at] ^= 0x04;
    fs.writeFileSync(file, damaged);
    await rejectsWith(t, target.importSealed(job()), { reason: 'open', message: /does not open/ }, `a bit flipped at ${at}`);
    await unchanged(`a bit flipped at ${at}`);
  }
  fs.writeFileSync(file, good);
  const reference = await collectionOf('sealed-defect-ref', dim, 0, 0);
  await reference.importCodes(dump, { clear: true });
  await target.importSealed(job());
  t.same(await rowsOf(target), await rowsOf(reference), 'the file restored loads, as importCodes of the dump does');
  ix.dropCollection('sealed-defect-ref');

  const vectors = ix.createCollection('sealed-with-vectors', dim);
  t.teardown(() => ix.dropCollection('sealed-with-vectors'));
  await rejectsWith(t, vectors.importSealed(job()), { message: /float32/ }, 'into a collection with vectors');
});

t.test('rows that are sealed properly but are not valid rows are refused too', { skip }, async (t) => {
  const dim = 100;
  const src = await collectionOf('sealed-rows-src', dim, N, 8);
  const good = await src.exportCodes();
  ix.dropCollection('sealed-rows-src');
  const target = await collectionOf('sealed-rows-dst', dim, 10, 3, 'kept');
  t.teardown(() => ix.dropCollection('sealed-rows-dst'));
  const before = await rowsOf(target);
  const spoilt: Array<[string, (d: CodeDump) => void, RegExp]> = [
    ['a code of -128', (d) => { d.codes[9000 * d.stride + 3] = 0x80; }, /not a valid code row/],
    ['a code sum off by one', (d) => { d.sums[4500] += 1; }, /not a valid code row/],
    ['padding that is not zero', (d) => { d.codes[17 * d.stride + dim + 2] = 1; }, /not a valid code row/],
    ['a scale above 1', (d) => { d.scales[1] = 1.5; }, /not a valid code row/],
    ['a key twice', (d) => { d.keys = d.keys.replace('p-09999', 'p-00001'); }, /key twice/],
    ['an empty key', (d) => { d.keys = d.keys.replace('p-04100', ''); }, /empty key/],
  ];
  for (const [what, spoil, message] of spoilt) {
    const d: CodeDump = { ...good, codes: Uint8Array.from(good.codes), scales: Float32Array.from(good.scales), sums: Int32Array.from(good.sums) };
    spoil(d);
    const snapshot = await snapshotOf(d, 'spoilt.snap');
    try {
      await rejectsWith(t, target.importSealed(sealedJob(snapshot, keyBytes())), { message }, what);
    } finally {
      closeSnapshot(snapshot);
    }
    t.same(await rowsOf(target), before, `${what}: the collection is unchanged`);
  }
});
