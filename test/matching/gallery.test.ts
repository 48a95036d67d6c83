// The per-account in-memory gallery behind {upsert/remove/get/search}: rebuilt from LMDB.
import t from 'tap';
import { dot } from '../../src/matching/dot';
import { ScanGallery } from '../../src/matching/gallery';
import { Galleries } from '../../src/matching/galleries';
import { IndexGallery, type TemplateSource } from '../../src/matching/index-gallery';
import { similarityIndex } from '../../src/similarity-index/similarity-index';
import { gaussian, rng } from '../helpers/index-addon';
import { openStore } from '../../src/storage/lmdb/store';
import { DIM, templateFor, FAKE_MODEL_ID, OTHER_MODEL_IDS } from '../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
import { tempDir } from '../helpers/app';

t.test('search: top-k above the floor, best first, deterministic ties', async (t) => {
  const g = new ScanGallery();
  const a = templateFor(1, 0, 1);
  await g.upsert('a', a);
  await g.upsert('a2', templateFor(1, 1, 0.9));
  await g.upsert('a3', templateFor(1, 2, 0.5));
  await g.upsert('b', templateFor(2, 0, 1));
  await g.upsert('z', a);
  t.equal(g.size, 5);
  const hits = await g.search(a, 3, 0.4);
  t.same(hits.map((h) => h.personId), ['a', 'z', 'a2']);
  t.ok(Math.abs(hits[2].cosine - 0.9) < 1e-5);
  t.same((await g.search(a, 10, 0.95)).map((h) => h.personId), ['a', 'z']);
  t.same(await g.search(a, 0, -1), []);
  t.ok(await g.remove('z'));
  t.notOk(await g.remove('z'));
  t.same((await g.search(a, 1, 0.99)).map((h) => h.personId), ['a']);
  t.equal((await g.get('b'))?.length, DIM);
  t.equal(await g.get('nobody'), undefined);
});

t.test('upsert copies and replaces; dimension is enforced', async (t) => {
  const g = new ScanGallery();
  const v = Float32Array.from(templateFor(3, 0, 1));
  await g.upsert('p', v);
  v.fill(0);
  t.ok(dot((await g.get('p'))!, templateFor(3, 0, 1)) > 0.999, 'stored a copy');
  await g.upsert('p', templateFor(4, 0, 1));
  t.equal(g.size, 1);
  t.ok(dot((await g.get('p'))!, templateFor(4, 0, 1)) > 0.999, 'replaced');
  await t.rejects(g.upsert('q', new Float32Array(3)), new RegExp(`expected ${DIM}`));
});

t.test('galleries per account, rebuilt from the store, other models skipped', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(() => store.close());
  const img = new Uint8Array([1, 2, 3]);
  const now = new Date().toISOString();
  await store.persons.create('acc1', 'p1', { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: img }, now);
  await store.persons.create('acc2', 'p1', { modelId: MODEL, template: templateFor(2, 0, 1), referenceImage: img }, now);
  await store.persons.create('acc2', 'old', { modelId: OTHER_MODEL_IDS[1], template: templateFor(3, 0, 1), referenceImage: img }, now);
  const galleries = new Galleries();
  t.same(await galleries.rebuild(store.persons, MODEL), { loaded: 2, stale: 1 });
  t.equal(galleries.of('acc1').size, 1);
  t.equal(galleries.of('acc2').size, 1);
  t.equal(galleries.of('acc3').size, 0);
  t.ok(dot((await galleries.of('acc2').get('p1'))!, templateFor(2, 0, 1)) > 0.999);
  t.same(await galleries.of('acc1').search(templateFor(2, 0, 1), 1, 0.5), [], 'acc1 never sees acc2');
});

t.test('score (verify): the cosine with one person, both gallery kinds; undefined when absent', async (t) => {
  const galleries = new Galleries();
  t.teardown(() => galleries.close());
  for (const g of [new ScanGallery(), galleries.of('score-acc')]) {
    t.equal(await g.score('p', templateFor(1, 0, 1)), undefined, 'empty gallery');
    await g.upsert('p', templateFor(1, 0, 1));
    await g.upsert('q', templateFor(2, 0, 1));
    t.ok(Math.abs((await g.score('p', templateFor(1, 3, 0.7)))! - 0.7) < 1e-5, 'cosine of the probe with p');
    t.ok(Math.abs((await g.score('q', templateFor(1, 0, 1)))! - dot(templateFor(1, 0, 1), templateFor(2, 0, 1))) < 1e-5);
    t.equal(await g.score('nobody', templateFor(1, 0, 1)), undefined);
    await g.remove('p');
    t.equal(await g.score('p', templateFor(1, 0, 1)), undefined, 'removed');
  }
});

// ---- IndexGallery with a TemplateSource: the index keeps only int8 rows, the exact scores come from the source.

/** Clustered templates (near-duplicates), so that int8 candidates and exact ranks often differ. */
function clusteredTemplates(n: number, seed: number): Float32Array[] {
  const g = gaussian(rng(seed));
  const centres = Array.from({ length: Math.ceil(n / 4) }, () => Float32Array.from({ length: DIM }, g));
  return Array.from({ length: n }, (_, i) => Float32Array.from(centres[i % centres.length], (v) => v + 0.6 * g()));
}

function mapSource(map: Map<string, Float32Array>, asPromise = false): TemplateSource & { calls: number } {
  const source = Object.assign(
    (ids: readonly string[]) => {
      source.calls++;
      const out = ids.map((id) => map.get(id));
      return asPromise ? Promise.resolve(out) : out;
    },
    { calls: 0 },
  );
  return source;
}

t.test('index gallery with a template source: the same hits and exact scores as with float32 in the index', async (t) => {
  const n = 3000;
  const templates = clusteredTemplates(n, 21);
  const ids = templates.map((_, i) => `person-${String(i).padStart(5, '0')}`);
  const flat = new Float32Array(n * DIM);
  templates.forEach((v, i) => flat.set(v, i * DIM));
  const stored = new Map(ids.map((id, i) => [id, templates[i]]));
  const plain = new IndexGallery(`src-plain-${process.pid}`);
  const withSource = new IndexGallery(`src-rows-${process.pid}`, mapSource(stored, true));
  t.teardown(() => { plain.drop(); withSource.drop(); });
  for (const g of [plain, withSource]) {
    await g.load(ids, flat, DIM, { clear: true });
    await g.remove('person-00007');
    await g.upsert('person-00008', templates[9]);  // an exact duplicate of person-00009: a tie, ordered by id
  }
  stored.delete('person-00007');
  stored.set('person-00008', templates[9]);
  t.equal(similarityIndex().collection(`src-rows-${process.pid}`)!.stats().vectors, false, 'no float32 copy in the index');
  t.equal(similarityIndex().collection(`src-plain-${process.pid}`)!.stats().vectors, true);

  const queries = clusteredTemplates(60, 22).map((q, j) => (j % 3 === 0 ? templates[(j * 37) % n] : q));
  queries.push(templates[9]);
  for (const [topK, floor] of [[1, -1], [10, -1], [10, 0.3], [50, 0.1]] as const) {
    let differ = 0;
    for (const q of queries) {
      const a = await plain.search(q, topK, floor);
      const b = await withSource.search(q, topK, floor);
      if (JSON.stringify(a) !== JSON.stringify(b)) differ++;
    }
    t.equal(differ, 0, `top ${topK} floor ${floor}: identical ids and scores for ${queries.length} queries`);
  }
  const tie = await withSource.search(templates[9], 2, 0.99);
  t.same(tie.map((h) => h.personId), ['person-00008', 'person-00009'], 'equal scores ordered by personId');
  t.same(await withSource.searchBatch(queries.slice(0, 8), 10, 0.2), await Promise.all(queries.slice(0, 8).map((q) => withSource.search(q, 10, 0.2))), 'batch = single searches');
  t.same(await withSource.searchBatch(queries.slice(0, 8), 10, 0.2), await plain.searchBatch(queries.slice(0, 8), 10, 0.2), 'batch = the plain gallery');

  t.equal(await withSource.score('person-00100', queries[1]), await plain.score('person-00100', queries[1]), 'score from the source');
  t.equal(await withSource.score('person-00007', queries[1]), undefined, 'removed: unknown to the source');
  t.equal(await withSource.get('person-00100'), stored.get('person-00100'), 'get reads the source');
  t.equal(await withSource.get('nobody'), undefined);
});

t.test('index gallery with a template source: candidates the source lacks are dropped; a broken source fails', async (t) => {
  const stored = new Map<string, Float32Array>();
  const source = mapSource(stored);
  const g = new IndexGallery(`src-drop-${process.pid}`, source);
  t.teardown(() => g.drop());
  t.same(await g.search(templateFor(1, 0, 1), 5, -1), [], 'empty gallery');
  t.equal(source.calls, 0, 'the source is not asked without a collection');
  for (const [id, identity] of [['a', 1], ['b', 1], ['c', 2]] as const) {
    const v = templateFor(identity, id === 'b' ? 1 : 0, 0.9);
    await g.upsert(id, v);
    stored.set(id, v);
  }
  stored.delete('a');  // e.g. removed from the store, the gallery not updated yet
  const hits = await g.search(templateFor(1, 0, 1), 5, -1);
  t.same(hits.map((h) => h.personId), ['b', 'c'], 'a is dropped, the others are scored');
  t.ok(Math.abs(hits[0].cosine - 0.9) < 1e-5, 'exact cosine');
  t.equal(source.calls, 1, 'one source call per search');
  t.same(await g.search(templateFor(1, 0, 1), 0, -1), []);

  const short = new IndexGallery(`src-short-${process.pid}`, () => [undefined]);
  t.teardown(() => short.drop());
  await short.upsert('x', templateFor(3, 0, 1));
  await short.upsert('y', templateFor(4, 0, 1));
  await t.rejects(short.search(templateFor(3, 0, 1), 5, -1), /returned 1 templates for 2 persons/);
  const wrongSize = new IndexGallery(`src-size-${process.pid}`, () => [new Float32Array(3)]);
  t.teardown(() => wrongSize.drop());
  await wrongSize.upsert('x', templateFor(3, 0, 1));
  await t.rejects(wrongSize.search(templateFor(3, 0, 1), 5, -1), /has 3 values/);
});

t.test('index gallery snapshots: exportCodes then importCodes gives the same searches', async (t) => {
  const n = 500;
  const templates = clusteredTemplates(n, 23);
  const ids = templates.map((_, i) => `p${i}`);
  const flat = new Float32Array(n * DIM);
  templates.forEach((v, i) => flat.set(v, i * DIM));
  const stored = new Map(ids.map((id, i) => [id, templates[i]]));
  const first = new IndexGallery(`snap-g1-${process.pid}`, mapSource(stored));
  const second = new IndexGallery(`snap-g2-${process.pid}`, mapSource(stored));
  const plain = new IndexGallery(`snap-g3-${process.pid}`);
  t.teardown(() => { first.drop(); second.drop(); plain.drop(); });
  t.equal(await first.exportCodes(), undefined, 'no collection yet: nothing to export');
  await first.load(ids, flat, DIM, { clear: true });
  const dump = (await first.exportCodes())!;
  t.equal(dump.count, n);
  await second.importCodes(dump, { clear: true });
  t.equal(second.size, n);
  for (const q of clusteredTemplates(20, 24)) t.same(await second.search(q, 10, -1), await first.search(q, 10, -1));
  await t.rejects(plain.importCodes(dump), { code: 'ERR_INDEX_BAD_ARGUMENT', message: /template source/ }, 'a gallery with float32 in the index cannot take codes');
  t.equal(plain.size, 0);
  await t.rejects(second.importCodes({ ...dump, layout: 'float32-v1' }), { code: 'ERR_INDEX_BAD_ARGUMENT' });
  t.equal(second.size, n, 'a refused dump changes nothing');
});
