// Concurrent searches and writes on the same collections: no crash, no torn read, no wrong result.
// Runs a few seconds, bounded.
import t from 'tap';

import { dot, newIndex, normalised, randomVectors } from '../helpers/index-addon';

const ix = newIndex();
const DIM = 128;
const SECONDS = Number(process.env.INDEX_STRESS_SECONDS ?? 3);

t.test('searches during updates, removes and adds never see a half-written template', async (t) => {
  const c = ix.createCollection('stress', DIM);
  const bgCount = 20000;
  await c.bulkLoad(randomVectors(bgCount, DIM, 1), Array.from({ length: bgCount }, (_, i) => `bg-${i}`));
  // The query A and a second template B close to it: a hot key's score is exactly one of two values.
  const a = randomVectors(1, DIM, 2);
  const noise = randomVectors(1, DIM, 3);
  const b = a.map((x, i) => x + 0.6 * noise[i]);
  const sAA = dot(normalised(a), normalised(a));
  const sAB = dot(normalised(a), normalised(b));
  const HOT = 20;
  for (let i = 0; i < HOT; i++) await c.add(`hot-${i}`, a);

  const deadline = Date.now() + SECONDS * 1000;
  let searches = 0;
  let writes = 0;
  const problems: string[] = [];

  const searcher = async (batch: number, threads: number) => {
    const queries = new Float32Array(batch * DIM);
    for (let j = 0; j < batch; j++) queries.set(a, j * DIM);
    while (Date.now() < deadline) {
      const res = await c.searchBatch(queries, { k: 30, threads });
      searches++;
      for (const hits of res) {
        const seen = new Set<string>();
        for (let i = 0; i < hits.length; i++) {
          const h = hits[i];
          if (seen.has(h.key)) problems.push(`duplicate ${h.key}`);
          seen.add(h.key);
          if (i > 0 && hits[i - 1].score < h.score) problems.push('not sorted');
          if (h.key.startsWith('hot-') && Math.abs(h.score - sAA) > 1e-5 && Math.abs(h.score - sAB) > 1e-5)
            problems.push(`torn read: ${h.key} scored ${h.score}`);
          if (!/^(hot|bg|tmp)-\d+$/.test(h.key)) problems.push(`unknown key ${h.key}`);
        }
        if (hits.length !== 30) problems.push(`${hits.length} hits`);
      }
    }
  };

  // Two writers on disjoint keys (even / odd hot keys, their own temporary keys).
  const writer = async (w: number) => {
    let i = 0;
    // Whole cycles of five steps only, so a temporary key added in step 3 is always removed in step 4.
    while (i % 5 !== 0 || Date.now() < deadline) {
      const hot = `hot-${(2 * i + w) % HOT}`;
      const tmp = (j: number) => `tmp-${w * 1e7 + j}`;
      switch (i % 5) {
        case 0: await c.update(hot, (i & 8) ? b : a); break;
        case 1: await c.upsert(hot, (i & 16) ? a : b); break;
        case 2: if (await c.remove(hot)) await c.add(hot, a); break;
        case 3: await c.add(tmp(i), randomVectors(1, DIM, i)); break;
        case 4: await c.remove(tmp(i - 1)); break;
      }
      i++;
      writes++;
    }
  };

  await Promise.all([searcher(1, 1), searcher(4, 2), searcher(1, 0), writer(0), writer(1)]);
  t.same(problems.slice(0, 10), [], 'no torn reads, duplicates or wrong keys');
  t.ok(searches > 10 && writes > 10, `${searches} searches and ${writes} writes ran concurrently`);
  t.equal(c.size, bgCount + HOT, 'every temporary key removed again');
  ix.dropCollection('stress');
});

t.test('a bulk load with clear swaps the whole content at once', async (t) => {
  const c = ix.createCollection('swap', DIM);
  const n = 5000;
  const data = randomVectors(n, DIM, 9);
  const keysOf = (p: string) => Array.from({ length: n }, (_, i) => `${p}-${i}`);
  await c.bulkLoad(data, keysOf('gen0'), { clear: true });
  const deadline = Date.now() + Math.min(SECONDS, 2) * 1000;
  const problems: string[] = [];
  let loads = 0;
  let searches = 0;
  const loader = async () => {
    for (let g = 1; Date.now() < deadline; g++) {
      await c.bulkLoad(data, keysOf(`gen${g}`), { clear: true });
      loads++;
    }
  };
  const searcher = async () => {
    const q = data.subarray(0, DIM);
    while (Date.now() < deadline) {
      const hits = await c.search(q, { k: 20 });
      searches++;
      const gens = new Set(hits.map((h) => h.key.split('-')[0]));
      if (gens.size !== 1) problems.push(`mixed generations ${[...gens].join(',')}`);
      if (hits.length !== 20) problems.push(`${hits.length} hits`);
      if (!hits[0].key.endsWith('-0') || Math.abs(hits[0].score - 1) > 1e-5) problems.push(`top hit ${hits[0].key}`);
    }
  };
  await Promise.all([loader(), searcher(), searcher()]);
  t.same(problems.slice(0, 10), [], 'every search saw one whole generation');
  t.ok(loads > 1 && searches > 1, `${loads} bulk loads and ${searches} searches`);
  t.equal(c.size, n);
  ix.dropCollection('swap');
});

t.test('dropping a collection while it is searched', async (t) => {
  const c = ix.createCollection('drop-me', DIM);
  await c.bulkLoad(randomVectors(50000, DIM, 11), Array.from({ length: 50000 }, (_, i) => `d-${i}`));
  const pending = Array.from({ length: 8 }, () => c.search(randomVectors(1, DIM, 12), { k: 5 }));
  t.ok(ix.dropCollection('drop-me'));
  const settled = await Promise.allSettled(pending);
  for (const s of settled) {
    if (s.status === 'fulfilled') t.equal(s.value.length, 5, 'a search that started finishes normally');
    else t.equal((s.reason as { code?: string }).code, 'ERR_INDEX_NO_COLLECTION', 'or sees no collection');
  }
});
