// CP_005: [quota] requests_per_day metered requests per account and UTC day. Metered are the
// operations whose spec error list has CP_005 (remove, get, identify, verify, compare).
import t from 'tap';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { startTestApp } from '../helpers/app';

const CP_005 = { code: 'CP_005', message: 'Number of available requests exceeded' };

t.test('each metered operation is refused with 400 CP_005 once the day is used up', async (t) => {
  let now = new Date('2024-05-01T23:59:00.000Z');
  const a = await startTestApp({ tune: (c) => { c.quota.requests_per_day = 2; }, deps: { now: () => now } });
  t.teardown(() => a.close());
  const img = await fakePhotoB64({ identity: 1 });
  const ops = [
    () => a.call({ method: 'GET', url: '/person/face/alice' }),
    () => a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: img } }),
    () => a.call({ method: 'POST', url: '/person/verify-face/alice', payload: { faceImage: img } }),
    () => a.call({ method: 'POST', url: '/person/compare-face', payload: { targetImage: img, sourceImage: img } }),
    () => a.call({ method: 'DELETE', url: '/person/face/alice' }),
  ];
  // Create and update are not metered.
  for (let i = 0; i < 3; i++) {
    t.equal((await a.call({ method: i ? 'PUT' : 'POST', url: '/person/face/alice', payload: { faceImage: img } })).statusCode, 200);
  }
  t.equal((await ops[0]()).statusCode, 200);
  t.equal((await ops[1]()).statusCode, 200);
  for (const op of ops) {
    const res = await op();
    t.same([res.statusCode, res.json()], [400, CP_005]);
  }
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice!' })).json().code, 'R_003', 'invalid requests are not counted or refused');
  t.equal(a.store.quota.used('default', '2024-05-01'), 2, 'refused requests are not counted');
  now = new Date('2024-05-02T00:00:01.000Z');
  t.equal((await ops[0]()).statusCode, 200, 'a new UTC day');
  const other = await a.store.apiKeys.create('acme', 'full', '', now.toISOString());
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice', key: other.key })).statusCode, 404, 'other accounts have their own count');
});

t.test('requests_per_day = 0 is unlimited and writes no counters', async (t) => {
  const a = await startTestApp();
  t.teardown(() => a.close());
  for (let i = 0; i < 5; i++) t.equal((await a.call({ method: 'GET', url: '/person/face/x' })).statusCode, 404);
  t.equal(a.store.quota.used('default', new Date().toISOString().slice(0, 10)), 0);
});
