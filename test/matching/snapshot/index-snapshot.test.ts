// Snapshots of a collection's int8 rows: exportCodes -> importCodes gives the same searches and stats, and
// every defect of a dump is refused with ERR_INDEX_BAD_ARGUMENT without loading anything.
import t from 'tap';

import { IndexError, type CodeDump } from '../../../src/similarity-index/similarity-index';
import { newIndex, randomVectors } from '../../helpers/index-addon';

const ix = newIndex();
const DIM = 100;  // stride 128: 28 bytes of padding per row

function keysOf(n: number, prefix = 'p'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

async function loaded(name: string, n: number, seed: number) {
  ix.dropCollection(name);
  const c = ix.createCollection(name, DIM, { vectors: false });
  await c.bulkLoad(randomVectors(n, DIM, seed), keysOf(n), { clear: true });
  return c;
}

function copyOf(d: CodeDump): CodeDump {
  return { ...d, codes: Uint8Array.from(d.codes), scales: Float32Array.from(d.scales), sums: Int32Array.from(d.sums) };
}

t.test('export then import into a fresh collection: identical searches and stats', async (t) => {
  const n = 9000;  // more than two chunks of rows
  const src = await loaded('snap-src', n, 1);
  // Removes move the last row into the hole: the dump must follow the row order, not the insertion order.
  for (const k of ['p-00003', 'p-04000', 'p-08999']) t.ok(await src.remove(k));
  const dump = await src.exportCodes();
  t.equal(dump.layout, 'int8-rowscale-v1');
  t.equal(dump.dim, DIM);
  t.equal(dump.stride, 128);
  t.equal(dump.count, n - 3);
  t.equal(dump.codes.length, dump.count * 128);
  t.equal(dump.scales.length, dump.count);
  t.equal(dump.sums.length, dump.count);
  t.equal(dump.keys.split('\0').length, dump.count);
  t.notOk(dump.keys.split('\0').includes('p-00003'));

  ix.dropCollection('snap-dst');
  const dst = ix.createCollection('snap-dst', DIM, { vectors: false });
  t.same(await dst.importCodes(dump, { clear: true }), { added: n - 3, replaced: 0 });
  const { bytesKeys: srcKeys, ...srcStats } = src.stats();
  const { bytesKeys: dstKeys, ...dstStats } = dst.stats();
  t.same(dstStats, srcStats, 'same size, layout and row memory');
  t.ok(dstKeys > 0 && dstKeys <= srcKeys, 'the key table is no bigger (it grew step by step in the source)');

  const queries = randomVectors(40, DIM, 2);
  for (const floor of [undefined, 0.1]) {
    const a = await src.searchBatch(queries, { k: 50, floor });
    const b = await dst.searchBatch(queries, { k: 50, floor });
    t.same(b, a, `same keys and estimated scores (floor ${floor})`);
  }
  const again = await dst.exportCodes();
  t.equal(again.keys, dump.keys, 'the copy exports the same rows');
  t.same(again.codes, dump.codes);
  t.same(again.sums, dump.sums);

  // Writes after the import behave as in the original.
  await src.upsert('new', queries.subarray(0, DIM));
  await dst.upsert('new', queries.subarray(0, DIM));
  t.same(await dst.search(queries.subarray(0, DIM), { k: 3 }), await src.search(queries.subarray(0, DIM), { k: 3 }));
  ix.dropCollection('snap-src');
  ix.dropCollection('snap-dst');
});

t.test('import without clear adds and replaces keys; an empty dump is fine', async (t) => {
  const a = await loaded('snap-a', 300, 3);
  const dump = await a.exportCodes();
  ix.dropCollection('snap-b');
  const b = ix.createCollection('snap-b', DIM, { vectors: false });
  await b.bulkLoad(randomVectors(10, DIM, 4), ['p-00000', 'p-00001', 'other-1', 'other-2', 'other-3', 'other-4', 'other-5', 'other-6', 'other-7', 'other-8']);
  t.same(await b.importCodes(dump), { added: 298, replaced: 2 });
  t.equal(b.size, 308);
  const q = randomVectors(5, DIM, 5);
  const inA = await a.searchBatch(q, { k: 5 });
  const inB = await b.searchBatch(q, { k: 400 });
  inA.forEach((hits, j) => {
    const onlyA = inB[j].filter((h) => !h.key.startsWith('other-')).slice(0, 5);
    t.same(onlyA, hits, 'the imported rows score as in the source, replaced ones included');
  });

  const empty = await ix.createCollection('snap-empty', DIM, { vectors: false }).exportCodes();
  t.same([empty.count, empty.keys, empty.codes.length, empty.scales.length, empty.sums.length], [0, '', 0, 0, 0]);
  t.same(await b.importCodes(empty), { added: 0, replaced: 0 });
  t.same(await b.importCodes(empty, { clear: true }), { added: 0, replaced: 0 });
  t.equal(b.size, 0, 'clearing with an empty dump empties');
  for (const name of ['snap-a', 'snap-b', 'snap-empty']) ix.dropCollection(name);
});

t.test('a bad dump is refused and changes nothing', async (t) => {
  const src = await loaded('snap-bad-src', 200, 6);
  const good = await src.exportCodes();
  ix.dropCollection('snap-bad');
  const c = ix.createCollection('snap-bad', DIM, { vectors: false });
  await c.bulkLoad(randomVectors(3, DIM, 7), ['x', 'y', 'z']);
  const before = await c.exportCodes();

  const cases: [string, (d: CodeDump) => unknown][] = [
    ['another layout', (d) => ({ ...d, layout: 'int8-rowscale-v2' })],
    ['another dim', (d) => ({ ...d, dim: 99 })],
    ['another stride', (d) => ({ ...d, stride: 64 })],
    ['count too big', (d) => ({ ...d, count: d.count + 1 })],
    ['count not an integer', (d) => ({ ...d, count: 1.5 })],
    ['codes too short', (d) => ({ ...d, codes: d.codes.subarray(1) })],
    ['scales too short', (d) => ({ ...d, scales: d.scales.subarray(1) })],
    ['sums too long', (d) => ({ ...d, sums: Int32Array.from([...d.sums, 0]) })],
    ['scales of the wrong type', (d) => ({ ...d, scales: Float64Array.from(d.scales) })],
    ['codes not a typed array', (d) => ({ ...d, codes: Array.from(d.codes) })],
    ['keys not a string', (d) => ({ ...d, keys: d.keys.split('\0') })],
    ['a key too few', (d) => ({ ...d, keys: d.keys.split('\0').slice(1).join('\0') })],
    ['an empty key', (d) => ({ ...d, keys: d.keys.replace('p-00007', '') })],
    ['a code of -128', (d) => { d.codes[150 * 128 + 5] = 0x80; return d; }],
    ['non-zero padding', (d) => { d.codes[199 * 128 + 120] = 1; return d; }],
    ['a wrong code sum', (d) => { d.sums[42] += 1; return d; }],
    ['a NaN scale', (d) => { d.scales[10] = NaN; return d; }],
    ['a negative scale', (d) => { d.scales[0] = -0.01; return d; }],
  ];
  for (const [what, spoil] of cases) {
    for (const clear of [true, false]) {
      const bad = spoil(copyOf(good)) as CodeDump;
      await t.rejects(c.importCodes(bad, { clear }), { code: 'ERR_INDEX_BAD_ARGUMENT' }, `${what} (clear ${clear})`);
      t.same(await c.exportCodes(), before, `${what}: nothing loaded`);
    }
  }
  t.same(await c.importCodes(copyOf(good), { clear: true }), { added: 200, replaced: 0 }, 'the unspoilt dump loads');

  const withVectors = ix.createCollection('snap-vectors', DIM);
  await t.rejects(withVectors.importCodes(copyOf(good)), { code: 'ERR_INDEX_BAD_ARGUMENT', message: /float32/ }, 'not into a collection with vectors');
  t.equal(withVectors.size, 0);
  t.same((await withVectors.exportCodes()).count, 0, 'a collection with vectors exports its codes too');
  for (const name of ['snap-bad-src', 'snap-bad', 'snap-vectors']) ix.dropCollection(name);
});

t.test('collections without vectors: int8 estimates; get, score and exact search refused', async (t) => {
  const n = 3000;
  const data = randomVectors(n, DIM, 8);
  const keys = keysOf(n);
  ix.dropCollection('snap-nv');
  ix.dropCollection('snap-v');
  const nv = ix.createCollection('snap-nv', DIM, { vectors: false });
  const v = ix.createCollection('snap-v', DIM);
  await nv.bulkLoad(data, keys);
  await v.bulkLoad(data, keys);
  t.equal(nv.hasVectors, false);
  t.equal(v.hasVectors, true);
  t.ok(nv.stats().bytesAllocated * 2 < v.stats().bytesAllocated, 'much less memory without the float32 copy');

  const queries = randomVectors(30, DIM, 9);
  const est = await nv.searchBatch(queries, { k: 64 });
  const exact = await v.exactSearchBatch(queries, { k: n });
  est.forEach((hits, j) => {
    t.equal(hits.length, 64);
    const truth = new Map(exact[j].map((h) => [h.key, h.score]));
    const worst = Math.max(...hits.map((h) => Math.abs(h.score - truth.get(h.key)!)));
    t.ok(worst < 0.02, `query ${j}: estimates within ${worst.toFixed(4)} of the float32 cosines`);
    t.ok(hits.some((h) => h.key === exact[j][0].key), `query ${j}: the exact best is among the candidates`);
    t.ok(hits.every((h, i) => i === 0 || hits[i - 1].score >= h.score), 'best estimate first');
  });
  // A floor keeps every row whose float32 cosine reaches it (estimates may be a little below it).
  const floor = exact[0][5].score;
  const floored = await nv.search(queries.subarray(0, DIM), { k: 1000, floor });
  const mustHave = exact[0].filter((h) => h.score >= floor).map((h) => h.key);
  t.ok(mustHave.every((k) => floored.some((h) => h.key === k)), 'no template at or above the floor is lost');
  t.ok(floored.length < 200, 'the floor still filters');

  await t.rejects(nv.get('p-00001'), { code: 'ERR_INDEX_BAD_ARGUMENT', message: /no float32/ });
  await t.rejects(nv.score(queries.subarray(0, DIM), ['p-00001']), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  await t.rejects(nv.exactSearchBatch(queries, { k: 1 }), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  t.throws(() => ix.createCollection('snap-nv', DIM), IndexError, 'the same name with vectors is refused');
  t.throws(() => ix.createCollection('snap-v', DIM, { vectors: false }), IndexError);
  t.equal(ix.createCollection('snap-nv', DIM, { vectors: false }).size, n, 'the same choice finds it');

  // cosines(): the scores a collection with vectors gives, bit for bit.
  const q = queries.subarray(0, DIM);
  const rows = new Float32Array(5 * DIM);
  const ids = exact[0].slice(0, 5).map((h) => h.key);
  ids.forEach((k, i) => rows.set(data.subarray(Number(k.slice(2)) * DIM, (Number(k.slice(2)) + 1) * DIM), i * DIM));
  t.same(Array.from(ix.cosines(q, rows)), Array.from(await v.score(q, ids)));
  t.ok(Number.isNaN(ix.cosines(q, Float32Array.from({ length: DIM }, () => NaN))[0]), 'a non-finite template scores NaN');
  t.throws(() => ix.cosines(Float32Array.from({ length: DIM }, () => Infinity), rows), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  ix.dropCollection('snap-nv');
  ix.dropCollection('snap-v');
});

t.test('export during writes copies whole rows; a clearing import during searches swaps generations whole', async (t) => {
  const dim = 128, hot = 40;
  ix.dropCollection('snap-live');
  const c = ix.createCollection('snap-live', dim, { vectors: false });
  await c.bulkLoad(randomVectors(5000, dim, 30), keysOf(5000, 'bg'));
  const a = randomVectors(hot, dim, 31), b = randomVectors(hot, dim, 32);
  const row = (v: Float32Array, i: number) => v.subarray(i * dim, (i + 1) * dim);
  for (let i = 0; i < hot; i++) await c.add(`hot-${i}`, row(a, i));
  // The two code rows each hot key can have (the index's own quantisation of A_i and B_i).
  const qa = ix.native.quantise(a, dim), qb = ix.native.quantise(b, dim);
  const variants = (i: number) => [qa, qb].map((q) => ({ codes: q.codes.subarray(i * dim, (i + 1) * dim), scale: q.scales[i] }));

  let stop = false;
  let writes = 0;
  const writer = (async () => {
    for (let j = 0; !stop; j++, writes++) await c.upsert(`hot-${j % hot}`, row(j & 1 ? b : a, j % hot));
  })();
  let torn = 0, exports = 0;
  const until = Date.now() + 1500;
  while (Date.now() < until) {
    const d = await c.exportCodes();
    exports++;
    const keys = d.keys.split('\0');
    keys.forEach((k, r) => {
      if (!k.startsWith('hot-')) return;
      const i = Number(k.slice(4));
      const codes = new Int8Array(d.codes.buffer, d.codes.byteOffset + r * d.stride, dim);
      const ok = variants(i).some((v) => v.scale === d.scales[r] && v.codes.every((x, j) => x === codes[j]));
      if (!ok) torn++;
    });
  }
  stop = true;
  await writer;
  t.ok(exports > 2 && writes > 20, `${exports} exports during ${writes} writes`);
  t.equal(torn, 0, 'every exported hot row is one whole version of its template');

  // Clearing imports of two generations (every key's template differs between them) while searching.
  const genA = await c.exportCodes();
  ix.dropCollection('snap-gen');
  const other = ix.createCollection('snap-gen', dim, { vectors: false });
  await other.bulkLoad(randomVectors(5000 + hot, dim, 33), genA.keys.split('\0'));
  const genB = await other.exportCodes();
  const q = randomVectors(4, dim, 34);
  const expect = [JSON.stringify(await c.searchBatch(q, { k: 20 })), JSON.stringify(await other.searchBatch(q, { k: 20 }))];
  stop = false;
  let mixed = 0, searches = 0;
  const searcher = (async () => {
    while (!stop) {
      const got = JSON.stringify(await c.searchBatch(q, { k: 20 }));
      searches++;
      if (!expect.includes(got)) mixed++;
    }
  })();
  for (let i = 0; i < 12; i++) await c.importCodes(i % 2 ? genA : genB, { clear: true });
  stop = true;
  await searcher;
  t.ok(searches > 5, `${searches} searches during 12 imports`);
  t.equal(mixed, 0, 'each search saw one generation whole');
  ix.dropCollection('snap-live');
  ix.dropCollection('snap-gen');
});
