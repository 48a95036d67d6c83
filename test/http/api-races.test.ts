// Concurrent requests on one account get the outcomes a sequential order would give: exactly one create of
// an id or of a face wins, an update racing a delete never leaves a ghost in the gallery, and a quota of N
// admits exactly N requests.
import t from 'tap';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';
import { startTestApp } from '../helpers/app';

/** An engine whose analyses finish out of order, so the requests really overlap. */
function jitteryEngine(): FakeEngine {
  const engine = new FakeEngine();
  engine.jitterMs = 20;
  return engine;
}

const tally = (codes: string[]) => codes.reduce<Record<string, number>>((m, c) => ({ ...m, [c]: (m[c] ?? 0) + 1 }), {});
const outcome = (res: { statusCode: number; json(): { code?: string } }) => (res.statusCode === 200 ? '200' : res.json().code!);

t.test('ten concurrent creates of one face under ten ids enrol exactly one', async (t) => {
  const a = await startTestApp({ engine: jitteryEngine() });
  t.teardown(() => a.close());
  const photos = await Promise.all(Array.from({ length: 10 }, (_, i) => fakePhotoB64({ identity: 7, variant: i + 1, cosine: 0.995 })));
  const results = await Promise.all(photos.map((faceImage, i) =>
    a.call({ method: 'POST', url: `/person/face/same-face-${i}`, payload: { faceImage } })));
  t.same(tally(results.map(outcome)), { 200: 1, F_012: 9 });
  t.equal(a.store.persons.count('default'), 1, 'one person stored');
});

t.test('fifty concurrent creates of one id: one 200, every other answer CP_002 (the id is judged before the face)', async (t) => {
  const a = await startTestApp({ engine: jitteryEngine() });
  t.teardown(() => a.close());
  const same = await fakePhotoB64({ identity: 100 });
  const others = await Promise.all(Array.from({ length: 25 }, (_, i) => fakePhotoB64({ identity: 101 + i })));
  const results = await Promise.all([...Array.from({ length: 25 }, () => same), ...others].map((faceImage) =>
    a.call({ method: 'POST', url: '/person/face/one-id', payload: { faceImage } })));
  t.same(tally(results.map(outcome)), { 200: 1, CP_002: 49 });
});

t.test('an update racing a delete leaves the person either updated or gone, never a ghost', async (t) => {
  const a = await startTestApp({ engine: jitteryEngine() });
  t.teardown(() => a.close());
  const seen = new Set<string>();
  for (let round = 0; round < 12; round++) {
    const id = `racer-${round}`;
    const first = await fakePhotoB64({ identity: 1000 + round });
    const second = await fakePhotoB64({ identity: 2000 + round });
    t.equal((await a.call({ method: 'POST', url: `/person/face/${id}`, payload: { faceImage: first } })).statusCode, 200);
    const [put, del] = await Promise.all([
      a.call({ method: 'PUT', url: `/person/face/${id}`, payload: { faceImage: second } }),
      a.call({ method: 'DELETE', url: `/person/face/${id}` }),
    ]);
    t.equal(del.statusCode, 200, 'the delete wins or follows the update');
    t.ok(put.statusCode === 200 || outcome(put) === 'NF_001', `update answers 200 or NF_001 (${put.statusCode})`);
    seen.add(outcome(put));
    t.equal((await a.call({ method: 'GET', url: `/person/face/${id}` })).statusCode, 404, 'gone from the store');
    for (const faceImage of [first, second]) {
      t.equal((await a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage } })).statusCode, 410,
        'gone from the gallery');
    }
    // The face can be enrolled again under a new id: nothing left of it blocks the duplicate check.
    t.equal((await a.call({ method: 'POST', url: `/person/face/${id}-again`, payload: { faceImage: second } })).statusCode, 200);
  }
  t.ok(seen.size >= 1, `outcomes seen: ${[...seen].join(', ')}`);
});

t.test('a quota of 5 admits exactly 5 of 40 concurrent metered requests', async (t) => {
  const a = await startTestApp({ engine: jitteryEngine(), tune: (c) => { c.quota.requests_per_day = 5; } });
  t.teardown(() => a.close());
  const results = await Promise.all(Array.from({ length: 40 }, () => a.call({ method: 'GET', url: '/person/face/nobody' })));
  t.same(tally(results.map(outcome)), { NF_001: 5, CP_005: 35 });
});

t.test('accounts do not wait on each other and the lock map empties', async (t) => {
  const a = await startTestApp({ engine: jitteryEngine() });
  t.teardown(() => a.close());
  const order: string[] = [];
  let release!: () => void;
  const blocked = a.store.exclusive('acc-a', () => new Promise<void>((r) => { release = r; }).then(() => { order.push('a'); }));
  await a.store.exclusive('acc-b', async () => { order.push('b'); });
  release();
  await blocked;
  t.same(order, ['b', 'a'], 'account b ran while account a held its lock');
  const failing = a.store.exclusive('acc-a', async () => { throw new Error('boom'); });
  await t.rejects(failing, /boom/);
  t.equal(await a.store.exclusive('acc-a', async () => 'next'), 'next', 'a failure does not block the account');
});
