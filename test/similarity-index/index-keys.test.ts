// The collection's compact key table (native/core/index/key_table.*): every key keeps pointing at its own
// row through adds, swap-removes, arena compaction, failed appends and re-adds; the key length limit.
import t from 'tap';

import { newIndex, normalised, randomVectors, rng } from '../helpers/index-addon';

const ix = newIndex();
const DIM = 16;

/** Asserts that every live key reads back its own template and that no other key is present. */
async function checkAll(t: tap.Test, c: ReturnType<typeof ix.createCollection>, live: Map<string, Float32Array>, what: string) {
  let wrong = 0;
  for (const [key, v] of live) {
    const got = await c.get(key);
    const want = normalised(v);
    if (!got || got.some((x, i) => Math.abs(x - want[i]) > 1e-6)) wrong++;
  }
  t.equal(wrong, 0, `${what}: every key reads its own template`);
  t.equal(c.size, live.size, `${what}: size`);
  const dump = await c.exportCodes();
  const keys = dump.count ? dump.keys.split('\0') : [];
  t.same([...keys].sort(), [...live.keys()].sort(), `${what}: exactly the live keys, one row each`);
}

t.test('keys follow their rows through removes, compaction and re-adds', async (t) => {
  ix.dropCollection('keys-1');
  const c = ix.createCollection('keys-1', DIM);
  const rand = rng(11);
  // Long keys (~200 bytes) so that removals soon leave more than half of the key bytes as garbage.
  const keyOf = (i: number) => `k${i}-${'x'.repeat(150 + (i % 97))}`;
  const data = randomVectors(3000, DIM, 12);
  const row = (i: number) => data.subarray(i * DIM, (i + 1) * DIM);
  const live = new Map<string, Float32Array>();
  const n = 3000;
  await c.bulkLoad(data, Array.from({ length: n }, (_, i) => keyOf(i)));
  for (let i = 0; i < n; i++) live.set(keyOf(i), row(i));
  await checkAll(t, c, live, 'after the bulk load');

  // Remove two thirds in random order (compacts the arena more than once), checking along the way.
  const order = [...live.keys()].sort(() => rand() - 0.5);
  for (let j = 0; j < 2000; j++) {
    t.equal(await c.remove(order[j]), true);
    live.delete(order[j]);
    if (j === 700 || j === 1999) await checkAll(t, c, live, `after ${j + 1} removes`);
  }
  t.ok(c.stats().bytesKeys < 500_000, `removed key bytes were given back by compaction (${c.stats().bytesKeys} bytes for 1000 keys of ~200)`);

  // Re-add some removed keys with other templates, upsert live ones, one by one and in a batch.
  for (let j = 0; j < 200; j++) {
    const key = order[j];
    const v = row((j * 7) % n);
    t.equal(await c.upsert(key, v), true, 're-added');
    live.set(key, v);
  }
  const batchKeys = [...order.slice(200, 400), ...order.slice(2500, 2600)];
  const batch = randomVectors(batchKeys.length, DIM, 13);
  t.same(await c.bulkLoad(batch, batchKeys), { added: 200, replaced: 100 });
  batchKeys.forEach((k, i) => live.set(k, batch.subarray(i * DIM, (i + 1) * DIM)));
  await checkAll(t, c, live, 'after re-adds and replacements');

  // A failed append (a NaN template after new keys) takes its keys back and changes nothing.
  const bad = randomVectors(5, DIM, 14);
  bad[3 * DIM] = NaN;
  await t.rejects(c.bulkLoad(bad, ['new-1', 'new-2', 'new-3', 'new-4', 'new-5']), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  await checkAll(t, c, live, 'after a rejected append');
  t.same(await c.bulkLoad(bad.subarray(0, 3 * DIM), ['new-1', 'new-2', 'new-3']), { added: 3, replaced: 0 }, 'the same keys can be added afterwards');
  for (let i = 0; i < 3; i++) live.set(`new-${i + 1}`, bad.subarray(i * DIM, (i + 1) * DIM));
  await checkAll(t, c, live, 'after the append');

  // Removing everything and starting again.
  for (const k of [...live.keys()]) await c.remove(k);
  live.clear();
  await checkAll(t, c, live, 'emptied');
  await c.add('again', row(1));
  live.set('again', row(1));
  await checkAll(t, c, live, 'after emptying');
  ix.dropCollection('keys-1');
});

t.test('many short keys: lookups stay exact across table growth', async (t) => {
  ix.dropCollection('keys-2');
  const c = ix.createCollection('keys-2', DIM);
  const n = 20000;
  const data = randomVectors(n, DIM, 15);
  // Loaded block by block, so the table grows and rehashes several times.
  for (let s = 0; s < n; s += 1500) {
    const e = Math.min(n, s + 1500);
    await c.bulkLoad(data.subarray(s * DIM, e * DIM), Array.from({ length: e - s }, (_, i) => `p${s + i}`));
  }
  const probe = Array.from({ length: 500 }, (_, i) => `p${(i * 7919) % n}`);
  const scores = await c.score(data.subarray(0, DIM), [...probe, 'p-none', 'p20000', 'P1']);
  t.equal(scores.slice(0, 500).filter((s) => s === undefined).length, 0, 'present keys are found');
  t.same(scores.slice(500), [undefined, undefined, undefined], 'absent keys are not');
  const q = data.subarray(1234 * DIM, 1235 * DIM);
  t.equal((await c.search(q, { k: 1 }))[0].key, 'p1234', 'a search names the right key');
  ix.dropCollection('keys-2');
});

t.test('keys up to 65535 bytes; longer ones are refused', async (t) => {
  ix.dropCollection('keys-3');
  const c = ix.createCollection('keys-3', DIM);
  const v = randomVectors(1, DIM, 16);
  const longest = 'a'.repeat(65535);
  await c.add(longest, v);
  t.equal((await c.search(v, { k: 1 }))[0].key, longest);
  await t.rejects(c.add('b'.repeat(65536), v), { code: 'ERR_INDEX_BAD_ARGUMENT', message: /65535/ });
  await t.rejects(c.bulkLoad(v, ['c'.repeat(65536)]), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  t.equal(c.size, 1);
  ix.dropCollection('keys-3');
});
