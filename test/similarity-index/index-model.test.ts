// Property-based: random sequences of add / update / upsert / remove / bulk load / clear / search on the
// native index against a plain TypeScript model (a Map of normalised templates + brute force search).
import assert from 'node:assert/strict';

import fc from 'fast-check';
import t from 'tap';

import { IndexError } from '../../src/similarity-index/similarity-index';
import { bruteForce, dot, newIndex, normalised, randomVectors, sameTopK } from '../helpers/index-addon';

const ix = newIndex();
const DIM = 24;
// Few keys (so operations collide), including non-ASCII ones (ties are ordered by code point).
const KEYS = ['a', 'b', 'c', 'd', 'e', 'aa', 'ab', 'é', 'ß', 'Z', 'k10', 'k9'];
// A small pool of templates with an exact duplicate (0 and 1), a scaled copy (2), and a zero vector (3):
// searches meet exact ties and zero scores.
const POOL: Float32Array[] = (() => {
  const r = randomVectors(8, DIM, 7);
  const pool = Array.from({ length: 8 }, (_, i) => r.slice(i * DIM, (i + 1) * DIM));
  pool[1] = pool[0].slice();
  pool[2] = pool[0].map((x) => x * 3.5);
  pool[3] = new Float32Array(DIM);
  return pool;
})();

type Op =
  | { t: 'add' | 'update' | 'upsert'; key: string; v: number }
  | { t: 'remove'; key: string }
  | { t: 'bulk'; items: [string, number][]; clear: boolean }
  | { t: 'clear' }
  | { t: 'search'; q: number; k: number; floor?: number };

const key = fc.constantFrom(...KEYS);
const vec = fc.integer({ min: 0, max: POOL.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constantFrom('add' as const, 'update' as const, 'upsert' as const), key, v: vec }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('remove' as const), key }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('bulk' as const), items: fc.array(fc.tuple(key, vec), { maxLength: 10 }), clear: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ t: 'clear' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('search' as const), q: vec, k: fc.integer({ min: 1, max: 15 }),
      floor: fc.option(fc.double({ min: -1, max: 1, noNaN: true }), { nil: undefined }),
    }),
  },
);

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    assert.ok(err instanceof IndexError, `unexpected error ${String(err)}`);
    return err.code;
  }
}

let run = 0;

t.test('add/update/remove/bulk/search sequences match a TypeScript model', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
      const name = `model-${run++}`;
      const c = ix.createCollection(name, DIM);
      const model = new Map<string, Float32Array>();
      try {
        for (const o of ops) {
          switch (o.t) {
            case 'add': {
              const had = model.has(o.key);
              assert.equal(await code(c.add(o.key, POOL[o.v])), had ? 'ERR_INDEX_KEY_EXISTS' : undefined);
              if (!had) model.set(o.key, normalised(POOL[o.v]));
              break;
            }
            case 'update': {
              const had = model.has(o.key);
              assert.equal(await code(c.update(o.key, POOL[o.v])), had ? undefined : 'ERR_INDEX_KEY_NOT_FOUND');
              if (had) model.set(o.key, normalised(POOL[o.v]));
              break;
            }
            case 'upsert':
              assert.equal(await c.upsert(o.key, POOL[o.v]), !model.has(o.key));
              model.set(o.key, normalised(POOL[o.v]));
              break;
            case 'remove':
              assert.equal(await c.remove(o.key), model.delete(o.key));
              assert.equal(await c.get(o.key), undefined, 'a removed key is gone');
              break;
            case 'bulk': {
              if (o.clear) model.clear();
              const before = new Set(model.keys());
              const distinct = new Set(o.items.map(([k]) => k));
              const data = new Float32Array(o.items.length * DIM);
              o.items.forEach(([k, v], i) => {
                data.set(POOL[v], i * DIM);
                model.set(k, normalised(POOL[v]));
              });
              const res = await c.bulkLoad(data, o.items.map(([k]) => k), { clear: o.clear });
              const replaced = [...distinct].filter((k) => before.has(k)).length;
              assert.deepEqual(res, { added: distinct.size - replaced, replaced });
              break;
            }
            case 'clear':
              await c.clear();
              model.clear();
              break;
            case 'search': {
              const got = await c.search(POOL[o.q], { k: o.k, floor: o.floor });
              // Scores within 1e-5 of the floor may fall either side of it (summation order differs).
              const lo = bruteForce(model, POOL[o.q], o.k, o.floor === undefined ? undefined : o.floor - 1e-5);
              const hi = bruteForce(model, POOL[o.q], o.k, o.floor === undefined ? undefined : o.floor + 1e-5);
              assert.ok(got.length >= hi.length && got.length <= lo.length, `search ${JSON.stringify(o)}: ${got.length} hits`);
              if (o.floor !== undefined) assert.ok(got.every((h) => h.score >= o.floor!), 'no hit below the floor');
              const want = lo.slice(0, got.length);
              const qn = normalised(POOL[o.q]);
              const scores = new Map([...model].map(([k, v]) => [k, dot(qn, v)]));
              // A different key is only allowed where the reference scores are tied within rounding.
              const why = sameTopK(got, want, scores);
              assert.equal(why, undefined, `search ${JSON.stringify(o)}: ${why}\n got ${JSON.stringify(got)}\n want ${JSON.stringify(want)}`);
              for (let i = 1; i < got.length; i++) {
                const [p, h] = [got[i - 1], got[i]];
                assert.ok(p.score > h.score || (p.score === h.score && p.key < h.key), 'ordered by score, then key');
              }
              break;
            }
          }
          assert.equal(c.size, model.size, `size after ${JSON.stringify(o)}`);
        }
        // Final state: every template is there, nothing else is.
        const all = await c.search(POOL[4], { k: 100 });
        assert.deepEqual(all.map((h) => h.key).sort(), [...model.keys()].sort());
        for (const [k, v] of model) {
          const stored = await c.get(k);
          assert.ok(stored && stored.every((x, i) => Math.abs(x - v[i]) < 1e-6), `template of ${k}`);
        }
      } finally {
        ix.dropCollection(name);
      }
    }),
    { numRuns: 150, seed: 42 },
  );
  t.pass('150 random sequences agree with the model');
});
