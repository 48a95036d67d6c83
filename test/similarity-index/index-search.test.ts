// The similarity index against a plain float32 brute force, and its API contract (errors, floor, k, bulk
// load, collections, verify/score).
import t from 'tap';

import { IndexError } from '../../src/similarity-index/similarity-index';
import { bruteForce, dot, newIndex, normalised, randomVectors, sameTopK, type RefHit } from '../helpers/index-addon';

const ix = newIndex();

function rows(data: Float32Array, dim: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (let i = 0; i < data.length / dim; i++) out.push(data.subarray(i * dim, (i + 1) * dim));
  return out;
}

/** Clustered gallery: `ids` random centres, `per` noisy templates each (near-duplicates), plus exact copies. */
function clustered(ids: number, per: number, dim: number, seed: number, noise = 0.35): Float32Array {
  const centres = randomVectors(ids, dim, seed);
  const eps = randomVectors(ids * per, dim, seed + 1);
  const out = new Float32Array(ids * per * dim);
  for (let i = 0; i < ids * per; i++) {
    const c = Math.floor(i / per);
    for (let d = 0; d < dim; d++) out[i * dim + d] = centres[c * dim + d] + noise * eps[i * dim + d];
  }
  return out;
}

async function checkAgainstBruteForce(t: tap.Test, name: string, dim: number, data: Float32Array, queries: Float32Array, k: number, floor?: number) {
  const c = ix.createCollection(name, dim);
  const keys = Array.from({ length: data.length / dim }, (_, i) => `id-${String(i).padStart(6, '0')}`);
  await c.bulkLoad(data, keys, { clear: true });
  const model = new Map<string, Float32Array>();
  rows(data, dim).forEach((r, i) => model.set(keys[i], normalised(r)));
  const got = await c.searchBatch(queries, { k, floor });
  let bad = 0;
  rows(queries, dim).forEach((q, j) => {
    const want = bruteForce(model, q, k, floor);
    const all = new Map<string, number>();
    const qn = normalised(q);
    for (const h of got[j]) all.set(h.key, dot(qn, model.get(h.key)!));
    const why = sameTopK(got[j], want, all);
    if (why) {
      bad++;
      if (bad < 5) t.fail(`${name} query ${j}: ${why}`);
    }
  });
  t.equal(bad, 0, `${name}: ${queries.length / dim} queries, top-${k}${floor !== undefined ? ` floor ${floor}` : ''} equal the brute force`);
  ix.dropCollection(name);
}

t.test('top-k equals a float32 brute force on random galleries', async (t) => {
  const dim = 512;
  await checkAgainstBruteForce(t, 'rand-1', dim, randomVectors(4000, dim, 1), randomVectors(50, dim, 2), 10);
  await checkAgainstBruteForce(t, 'rand-k1', dim, randomVectors(4000, dim, 3), randomVectors(50, dim, 4), 1);
  await checkAgainstBruteForce(t, 'rand-k50', dim, randomVectors(1000, dim, 5), randomVectors(20, dim, 6), 50);
  await checkAgainstBruteForce(t, 'rand-dim100', 100, randomVectors(3000, 100, 7), randomVectors(40, 100, 8), 10);
});

t.test('top-k equals the brute force on clustered galleries with near-duplicates', async (t) => {
  const dim = 512;
  const data = clustered(500, 8, dim, 11, 0.25);
  // Queries: new samples of enrolled identities, so the top hits are close to each other.
  const queries = clustered(500, 1, dim, 11, 0.25).subarray(0, 60 * dim);
  const noisy = randomVectors(60, dim, 13);
  for (let i = 0; i < queries.length; i++) queries[i] += 0.25 * noisy[i];
  await checkAgainstBruteForce(t, 'clustered', dim, data, queries, 10);
  await checkAgainstBruteForce(t, 'clustered-floor', dim, data, queries, 10, 0.5);
});

t.test('equal scores are ordered by key, whatever the slot order', async (t) => {
  const dim = 64;
  const c = ix.createCollection('ties', dim);
  const v = randomVectors(1, dim, 21);
  const other = randomVectors(1, dim, 22);
  const keys = ['m', 'b', 'z', 'a', 'q', 'c', 'y', 'd'];
  for (const k of keys) await c.add(k, v);
  await c.add('other', other);
  await c.remove('b'); // moves the last row into b's slot
  await c.add('b', v);
  const hits = await c.search(v, { k: 8 });
  t.same(hits.map((h) => h.key), ['a', 'b', 'c', 'd', 'm', 'q', 'y', 'z']);
  t.ok(hits.every((h) => h.score === hits[0].score), 'bit-identical scores for identical templates');
  t.ok(Math.abs(hits[0].score - 1) < 1e-6);
  // Many more duplicates than re-ranked candidates: the key order holds through the int8 stage too.
  const many = Array.from({ length: 300 }, (_, i) => `dup${String(i).padStart(3, '0')}`);
  const data = new Float32Array(300 * dim);
  for (let i = 0; i < 300; i++) data.set(v, i * dim);
  await c.bulkLoad(data, many.slice().reverse());
  const top = await c.search(v, { k: 5, rerank: 5 });
  t.same(top.map((h) => h.key), ['a', 'b', 'c', 'd', 'dup000']);
  ix.dropCollection('ties');
});

t.test('floor, k larger than the gallery, empty collection', async (t) => {
  const dim = 32;
  const c = ix.createCollection('small', dim);
  t.same(await c.search(randomVectors(1, dim, 1)), [], 'empty collection: no hits');
  const data = randomVectors(20, dim, 30);
  await c.bulkLoad(data, Array.from({ length: 20 }, (_, i) => `p${i}`));
  const q = data.subarray(0, dim);
  const all = await c.search(q, { k: 100 });
  t.equal(all.length, 20, 'k > size gives size hits');
  t.equal(all[0].key, 'p0');
  const floored = await c.search(q, { k: 100, floor: 0.2 });
  t.ok(floored.every((h) => h.score >= 0.2), 'nothing below the floor');
  t.same(floored, all.filter((h) => h.score >= 0.2), 'exactly the hits above the floor');
  t.same(await c.search(q, { k: 3, floor: 1.01 }), [], 'floor above every score: nothing');
  t.equal((await c.search(q, { k: 1 })).length, 1, 'k = 1');
  ix.dropCollection('small');
});

t.test('errors', async (t) => {
  const c = ix.createCollection('errors', 8);
  const v = new Float32Array(8).fill(1);
  await c.add('a', v);
  await t.rejects(c.add('a', v), { code: 'ERR_INDEX_KEY_EXISTS', status: 'FaceExists' });
  await t.rejects(c.update('nobody', v), { code: 'ERR_INDEX_KEY_NOT_FOUND', status: 'FaceNotInCollection' });
  await t.rejects(c.add('', v), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  await t.rejects(c.add('nan', new Float32Array(8).fill(NaN)), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  await t.rejects(c.add('inf', new Float32Array(8).fill(Infinity)), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  await t.rejects(c.add('short', new Float32Array(7)), TypeError);
  await t.rejects(c.search(new Float32Array(9)), TypeError);
  await t.rejects(c.search(v, { k: 0 }), TypeError);
  await t.rejects(c.search(v, { kernel: 'nope' as never }), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  const err = await c.add('a', v).catch((e: unknown) => e);
  t.ok(err instanceof IndexError, 'IndexError instances');
  t.throws(() => ix.createCollection('errors', 16), { code: 'ERR_INDEX_DIM_MISMATCH' });
  t.equal(ix.createCollection('errors', 8).size, 1, 'createCollection is idempotent');
  await t.rejects(c.bulkLoad(new Float32Array(16), ['x', 'y', 'z']), TypeError);
  await t.rejects(c.bulkLoad(new Float32Array(16).fill(NaN), ['x', 'y']), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  t.equal(c.size, 1, 'a rejected bulk load changes nothing');
  // Append mixing a replacement and new keys: a bad new template (checked while encoding) or a bad
  // replacement (checked first) takes everything back, the replaced key keeps its old template.
  const other = Float32Array.from([1, -1, 1, -1, 1, -1, 1, -1]);
  const mixed = new Float32Array(4 * 8);
  mixed.set(other, 0);                       // 'a' replaced by `other`
  mixed.set(other, 8);                       // new 'n1'
  mixed.fill(NaN, 16, 24);                   // new 'n2': bad
  mixed.set(other, 24);                      // new 'n3'
  await t.rejects(c.bulkLoad(mixed, ['a', 'n1', 'n2', 'n3']), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  const badReplacement = Float32Array.from(mixed);
  badReplacement.fill(NaN, 0, 8);
  badReplacement.set(other, 16);
  await t.rejects(c.bulkLoad(badReplacement, ['a', 'n1', 'n2', 'n3']), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  t.equal(c.size, 1, 'no new key survives a rejected append');
  t.same(Array.from((await c.get('a'))!).map((x) => +x.toFixed(4)), Array.from(v).map(() => +(1 / Math.sqrt(8)).toFixed(4)), 'the replaced key keeps its template');
  t.same((await c.search(other, { k: 5 })).map((h) => h.key), ['a'], 'searches see only what was there');
  const after = await c.bulkLoad(Float32Array.from([...other, ...other]), ['n1', 'n2']);
  t.same(after, { added: 2, replaced: 0 }, 'the taken-back keys can be added afterwards');
  t.equal(c.size, 3);
  ix.dropCollection('errors');
  await t.rejects(c.search(v), { code: 'ERR_INDEX_NO_COLLECTION' });
  t.equal(c.size, 0);
});

t.test('bulk load: clear, append, replace and repeated keys', async (t) => {
  const dim = 16;
  const c = ix.createCollection('bulk', dim);
  const a = randomVectors(100, dim, 40);
  const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
  t.same(await c.bulkLoad(a, keys, { clear: true }), { added: 100, replaced: 0 });
  const b = randomVectors(60, dim, 41);
  const keys2 = Array.from({ length: 60 }, (_, i) => `k${i + 70}`); // 30 replaced, 30 new
  keys2[59] = 'k75'; // repeated within the batch: the last template wins
  t.same(await c.bulkLoad(b, keys2), { added: 29, replaced: 30 });
  t.equal(c.size, 129);
  const k75 = await c.get('k75');
  const want75 = normalised(b.subarray(59 * dim, 60 * dim));
  t.ok(k75 && k75.every((x, i) => Math.abs(x - want75[i]) < 1e-6), 'repeated key: the last template wins');
  const k0 = await c.get('k0');
  t.ok(k0 && Math.abs(dot(k0, normalised(a.subarray(0, dim))) - 1) < 1e-6, 'untouched key kept');
  // A clearing load with repeated keys (large enough for the joined-keys path): last template wins, at
  // the place of the first occurrence; the unused rows leave nothing behind.
  const big = randomVectors(3000, dim, 42);
  const bigKeys = Array.from({ length: 3000 }, (_, i) => `r${i % 2500}`);
  t.same(await c.bulkLoad(big, bigKeys, { clear: true }), { added: 2500, replaced: 0 });
  t.equal(c.size, 2500);
  const r7 = await c.get('r7');
  const want7 = normalised(big.subarray(2507 * dim, 2508 * dim));
  t.ok(r7 && r7.every((x, i) => Math.abs(x - want7[i]) < 1e-6), 'repeated key in a clearing load: the last template wins');
  const top = await c.search(big.subarray(7 * dim, 8 * dim), { k: 2500 });
  t.equal(new Set(top.map((h) => h.key)).size, 2500, 'every key once');
  t.same(await c.bulkLoad(b.subarray(0, 2 * dim), ['x', 'y'], { clear: true }), { added: 2, replaced: 0 });
  t.equal(c.size, 2, 'clear replaces everything');
  t.equal(await c.get('k0'), undefined);
  ix.dropCollection('bulk');
});

t.test('collections are independent; score() and get() for verify', async (t) => {
  const dim = 24;
  const one = ix.createCollection('acct-1', dim);
  const two = ix.createCollection('acct-2', dim);
  const v = randomVectors(3, dim, 50);
  await one.add('alice', v.subarray(0, dim));
  await two.add('alice', v.subarray(dim, 2 * dim));
  await two.add('bob', v.subarray(2 * dim));
  t.equal(one.size, 1);
  t.equal(two.size, 2);
  t.ok(ix.collectionNames().includes('acct-1') && ix.collectionNames().includes('acct-2'));
  const s = await two.score(v.subarray(dim, 2 * dim), ['alice', 'bob', 'carol']);
  t.ok(Math.abs(s[0]! - 1) < 1e-6, 'score with itself is 1');
  t.ok(Math.abs(s[1]! - dot(normalised(v.subarray(dim, 2 * dim)), normalised(v.subarray(2 * dim)))) < 1e-6);
  t.equal(s[2], undefined, 'absent key');
  const hitsOne = await one.search(v.subarray(dim, 2 * dim), { k: 5 });
  t.same(hitsOne.map((h) => h.key), ['alice']);
  t.ok(Math.abs(hitsOne[0].score - dot(normalised(v.subarray(0, dim)), normalised(v.subarray(dim, 2 * dim)))) < 1e-6,
    'acct-1 alice is acct-1\'s template');
  t.ok(ix.collection('acct-2'), 'lookup by name');
  t.equal(ix.collection('acct-3'), undefined);
  t.ok(ix.dropCollection('acct-1'));
  t.notOk(ix.dropCollection('acct-1'));
  t.equal(two.size, 2, 'the other collection is untouched');
  ix.dropCollection('acct-2');
});

t.test('threads: partitioned scans give the same answer', async (t) => {
  const dim = 128;
  const c = ix.createCollection('threads', dim);
  const data = randomVectors(20000, dim, 60);
  await c.bulkLoad(data, Array.from({ length: 20000 }, (_, i) => `t${i}`));
  const queries = randomVectors(40, dim, 61);
  const one = await c.searchBatch(queries, { k: 10, threads: 1 });
  for (const threads of [2, 3, 8, 0]) t.same(await c.searchBatch(queries, { k: 10, threads }), one, `${threads} threads`);
  const single: RefHit[][] = [];
  for (const q of rows(queries, dim)) single.push(await c.search(q, { k: 10 }));
  t.same(single, one, 'a batch equals single searches');
  const exact = await c.exactSearchBatch(queries, { k: 10 });
  t.equal(exact.length, 40);
  t.same(exact.map((h) => h.map((x) => x.key)), one.map((h) => h.map((x) => x.key)), 'same as the float32 reference search');
  ix.dropCollection('threads');
});

t.test('stats and memory per template', async (t) => {
  const c = ix.createCollection('stats', 512);
  await c.bulkLoad(randomVectors(5000, 512, 70), Array.from({ length: 5000 }, (_, i) => `s${i}`));
  const s = c.stats();
  t.equal(s.size, 5000);
  t.equal(s.codeStride, 512);
  t.ok(s.bytesAllocated >= 5000 * (512 + 2048 + 8), 'codes + floats + scale/sum per row');
  await c.clear();
  t.equal(c.size, 0);
  ix.dropCollection('stats');
});
