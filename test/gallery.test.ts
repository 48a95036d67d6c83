// The per-account in-memory gallery behind {upsert/remove/get/search}: rebuilt from LMDB.
import t from 'tap';
import { dot } from '../src/matching/dot';
import { ScanGallery } from '../src/matching/gallery';
import { Galleries } from '../src/matching/galleries';
import { openStore } from '../src/storage/store';
import { DIM, templateFor, FAKE_MODEL_ID, OTHER_MODEL_IDS } from './helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
import { tempDir } from './helpers/app';

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
