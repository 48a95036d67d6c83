// Templates live in LMDB in segments of 32 (src/storage/lmdb/template-segment.ts) so the gallery rebuild
// reads segments, not persons. Codec, the repository against a plain Map model (fast-check), bulk create,
// the migration from storage schema 1 (templates inside person records) and the block-wise rebuild.
import fs from 'node:fs';
import fc from 'fast-check';
import { open } from 'lmdb';
import t from 'tap';

import { Galleries } from '../../src/matching/galleries';
import { openStore } from '../../src/storage/lmdb/store';
import {
  decodeSegment, emptySegment, encodeSegment, SEGMENT_CAPACITY, templateOf, withAppended,
  withoutTemplate, withTemplate,
} from '../../src/storage/lmdb/template-segment';
import { tempDir } from '../helpers/app';
import { DIM, templateFor, FAKE_MODEL_ID, OTHER_MODEL_IDS } from '../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;

const same = (a: Float32Array | undefined, b: Float32Array) => !!a && a.length === b.length && a.every((v, i) => v === b[i]);

t.test('segment codec: round trip, in-place update, swap-remove, capacity, damaged bytes', async (t) => {
  let s = emptySegment(DIM);
  for (let i = 0; i < 5; i++) s = withTemplate(s, `p${i}`, templateFor(i, 0, 1));
  const bytes = encodeSegment(s);
  t.equal(bytes.length, 16 + 5 * DIM * 4 + 'p0\np1\np2\np3\np4\n'.length);
  // At an odd byte offset, as LMDB may hand it out.
  const shifted = Buffer.alloc(bytes.length + 1);
  bytes.copy(shifted, 1);
  const back = decodeSegment(shifted.subarray(1));
  t.same(back.ids, ['p0', 'p1', 'p2', 'p3', 'p4']);
  for (let i = 0; i < 5; i++) t.ok(same(templateOf(back, `p${i}`), templateFor(i, 0, 1)), `template ${i} round-trips`);

  const updated = withTemplate(back, 'p2', templateFor(9, 0, 1));
  t.same(updated.ids, back.ids, 'update keeps the entry order');
  t.ok(same(templateOf(updated, 'p2'), templateFor(9, 0, 1)));
  t.ok(same(templateOf(back, 'p2'), templateFor(2, 0, 1)), 'the input segment is not changed');

  const removed = withoutTemplate(back, 'p1');
  t.same(removed.ids, ['p0', 'p4', 'p2', 'p3'], 'the last entry takes the removed place');
  t.ok(same(templateOf(removed, 'p4'), templateFor(4, 0, 1)));
  t.equal(templateOf(removed, 'p1'), undefined);
  t.equal(withoutTemplate(removed, 'nobody'), removed);
  t.same(withoutTemplate(withoutTemplate(emptySegment(DIM), 'x'), 'x').ids, []);

  const entries = Array.from({ length: 40 }, (_, i) => ({ personId: `q${i}`, template: templateFor(100 + i, 0, 1) }));
  const { segment: full, taken } = withAppended(back, entries);
  t.equal(taken, SEGMENT_CAPACITY - 5, 'appends only what fits');
  t.equal(full.ids.length, SEGMENT_CAPACITY);
  t.throws(() => withTemplate(full, 'one-more', templateFor(1, 0, 1)), RangeError);
  t.throws(() => withTemplate(back, 'short', new Float32Array(3)), RangeError);

  t.throws(() => decodeSegment(bytes.subarray(0, 10)), { name: 'SegmentFormatError' }, 'shorter than the header');
  t.throws(() => decodeSegment(bytes.subarray(0, bytes.length - 200)), { name: 'SegmentFormatError' }, 'truncated templates');
  const badFormat = Buffer.from(bytes);
  badFormat.writeUInt16LE(7, 0);
  t.throws(() => decodeSegment(badFormat), /format 7/);
  const badIds = Buffer.from(bytes.subarray(0, bytes.length - 3));  // drops "p4\n"
  t.throws(() => decodeSegment(badIds), /lists 4 ids for 5 templates/);
});

t.test('repository against a Map model: create, replace, model change, remove; segments stay dense', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const model = new Map<string, { modelId: string; seed: number }>();  // "account/person" -> current template
  const now = '2024-01-01T00:00:00.000Z';
  let run = 0;
  const op = fc.oneof(
    fc.record({ kind: fc.constant('create' as const), account: fc.constantFrom('a', 'b'), person: fc.integer({ min: 0, max: 80 }), seed: fc.integer({ min: 0, max: 999 }) }),
    fc.record({ kind: fc.constant('replace' as const), account: fc.constantFrom('a', 'b'), person: fc.integer({ min: 0, max: 80 }), seed: fc.integer({ min: 0, max: 999 }), model: fc.constantFrom(MODEL, OTHER_MODEL_IDS[0]) }),
    fc.record({ kind: fc.constant('remove' as const), account: fc.constantFrom('a', 'b'), person: fc.integer({ min: 0, max: 80 }) }),
  );
  await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 120 }), async (ops) => {
    run++;
    for (const o of ops) {
      const id = `r${run}-p${o.person}`;
      const k = `${o.account}/${id}`;
      if (o.kind === 'create') {
        const r = await store.persons.create(o.account, id, { modelId: MODEL, template: templateFor(o.seed, 0, 1), referenceImage: Buffer.from('i') }, now);
        if (model.has(k)) { if (r.created) throw new Error('created twice'); } else model.set(k, { modelId: MODEL, seed: o.seed });
      } else if (o.kind === 'replace') {
        const r = await store.persons.replace(o.account, id, { modelId: o.model, template: templateFor(o.seed, 0, 1), referenceImage: Buffer.from('j') }, now);
        if (model.has(k) !== !!r) throw new Error(`replace of ${k}: ${String(!!r)}`);
        if (r) model.set(k, { modelId: o.model, seed: o.seed });
      } else {
        const r = await store.persons.remove(o.account, id);
        if (model.has(k) !== !!r) throw new Error(`remove of ${k}: ${String(!!r)}`);
        if (r && !same(r.template, templateFor(model.get(k)!.seed, 0, 1))) throw new Error('removed template differs');
        model.delete(k);
      }
    }
    // Every person reads back its current template and model.
    for (const [k, v] of model) {
      const [account, id] = k.split('/');
      const p = store.persons.get(account, id);
      if (!p || p.modelId !== v.modelId || !same(p.template, templateFor(v.seed, 0, 1))) throw new Error(`${k} reads back wrong`);
    }
    // The blocks of each model hold exactly the live persons of that model, each once, with its template.
    for (const modelId of [MODEL, OTHER_MODEL_IDS[0]]) {
      const seen = new Map<string, Float32Array>();
      for (const b of store.persons.templateBlocks(modelId)) {
        // Never an empty segment left behind, never more than the capacity.
        if (b.ids.length < 1 || b.ids.length > SEGMENT_CAPACITY) throw new Error(`segment of ${b.ids.length}`);
        const raw = new Uint8Array(b.bytes.length);
        raw.set(b.bytes);
        const f = new Float32Array(raw.buffer);
        b.ids.forEach((id, i) => {
          const k = `${b.accountId}/${id}`;
          if (seen.has(k)) throw new Error(`${k} twice`);
          seen.set(k, f.subarray(i * b.dimension, (i + 1) * b.dimension));
        });
      }
      const expected = [...model].filter(([, v]) => v.modelId === modelId);
      if (seen.size !== expected.length) throw new Error(`${modelId}: ${seen.size} stored, ${expected.length} expected`);
      for (const [k, v] of expected) if (!same(seen.get(k), templateFor(v.seed, 0, 1))) throw new Error(`${k} template in blocks`);
    }
  }), { numRuns: 12 });
  t.pass('model holds');

  // After removing all but one person of an account, a new enrolment goes into that person's segment.
  const acc = 'dense';
  for (let i = 0; i < 70; i++) await store.persons.create(acc, `d${i}`, { modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') }, now);
  const countSegments = () => [...store.persons.templateBlocks(MODEL)].filter((b) => b.accountId === acc).length;
  t.equal(countSegments(), 3, '70 persons in 3 segments of 32');
  for (let i = 1; i < 70; i++) await store.persons.remove(acc, `d${i}`);
  t.equal(countSegments(), 1, 'empty segments are deleted');
  for (let i = 70; i < 100; i++) await store.persons.create(acc, `d${i}`, { modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') }, now);
  t.equal(countSegments(), 1, 'new persons fill the segment with room');
});

t.test('createMany: one transaction, whole segments, existing ids skipped', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const now = '2024-01-01T00:00:00.000Z';
  await store.persons.create('a', 'p3', { modelId: MODEL, template: templateFor(3, 0, 1), referenceImage: Buffer.from('old') }, now);
  const items = Array.from({ length: 100 }, (_, i) => ({ personId: `p${i}`, modelId: MODEL, template: templateFor(1000 + i, 0, 1), referenceImage: Buffer.from(`img${i}`) }));
  const r = await store.persons.createMany('a', [...items, items[7]], now);
  t.same(r, { created: 99, skipped: ['p3', 'p7'] });
  t.ok(same(store.persons.get('a', 'p3')!.template, templateFor(3, 0, 1)), 'the existing person is untouched');
  t.same(store.persons.referenceImage('a', 'p3'), Buffer.from('old'));
  t.ok(same(store.persons.get('a', 'p99')!.template, templateFor(1099, 0, 1)));
  t.same(store.persons.referenceImage('a', 'p42'), Buffer.from('img42'));
  t.equal(store.persons.count('a'), 100);
  t.equal([...store.persons.templateBlocks(MODEL)].length, 4, '100 persons in ceil(100 / 32) segments');
});

t.test('storage schema 1 (templates inside person records) is migrated on open', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const v1 = open({ path: dir, compression: false });
  const meta = v1.openDB<unknown, string>({ name: 'meta' });
  const persons = v1.openDB<Record<string, unknown>, [string, string]>({ name: 'persons' });
  const images = v1.openDB<Buffer, [string, string]>({ name: 'images', encoding: 'binary' });
  await v1.transaction(() => {
    meta.put('schema', 1);
    for (let i = 0; i < 75; i++) {
      const account = i % 3 === 0 ? 'x' : 'y';
      const t32 = templateFor(i, 0, 1);
      persons.put([account, `p${i}`], {
        personId: `p${i}`, created: '2023-05-06T07:08:09.010Z', updated: '2023-06-06T00:00:00.000Z',
        modelId: i === 74 ? OTHER_MODEL_IDS[2] : MODEL, template: Buffer.from(t32.buffer, t32.byteOffset, t32.byteLength),
      });
      images.put([account, `p${i}`], Buffer.from(`image ${i}`));
    }
  });
  await v1.close();

  let store = await openStore(dir);
  for (let i = 0; i < 75; i++) {
    const p = store.persons.get(i % 3 === 0 ? 'x' : 'y', `p${i}`)!;
    t.ok(p && same(p.template, templateFor(i, 0, 1)) && p.created === '2023-05-06T07:08:09.010Z' &&
      p.updated === '2023-06-06T00:00:00.000Z' && p.modelId === (i === 74 ? OTHER_MODEL_IDS[2] : MODEL), `p${i} migrated`);
  }
  t.same(store.persons.referenceImage('x', 'p0'), Buffer.from('image 0'));
  const galleries = new Galleries();
  t.same(await galleries.rebuild(store.persons, MODEL), { loaded: 74, stale: 1 });
  galleries.close();
  await store.close();
  store = await openStore(dir);  // now schema 2: opens without migrating again
  t.ok(same(store.persons.get('y', 'p1')!.template, templateFor(1, 0, 1)));
  await store.close();
});

t.test('rebuild in small blocks across accounts equals the stored persons', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const now = '2024-01-01T00:00:00.000Z';
  const sizes: Record<string, number> = { a: 150, b: 1, c: 70 };
  for (const [account, n] of Object.entries(sizes)) {
    await store.persons.createMany(account, Array.from({ length: n }, (_, i) => ({
      personId: `${account}${i}`, modelId: MODEL, template: templateFor(i + (account === 'a' ? 0 : account === 'b' ? 1000 : 2000), 0, 1), referenceImage: Buffer.from('i'),
    })), now);
  }
  for (let i = 0; i < 150; i += 7) await store.persons.remove('a', `a${i}`);
  const galleries = new Galleries();
  t.teardown(() => galleries.close());
  const { loaded, stale } = await galleries.rebuild(store.persons, MODEL, { blockSize: 40 });
  t.equal(stale, 0);
  t.equal(loaded, store.persons.count());
  for (const account of Object.keys(sizes)) t.equal(galleries.of(account).size, store.persons.count(account), `${account} complete`);
  const hits = await galleries.of('a').search(templateFor(8, 0, 1), 1, 0.5);
  t.same(hits.map((h) => h.personId), ['a8']);
  t.same(await galleries.of('a').search(templateFor(7, 0, 1), 1, 0.5), [], 'a removed person is not loaded');
  t.same((await galleries.of('c').search(templateFor(2069, 0, 1), 1, 0.5)).map((h) => h.personId), ['c69']);
});
