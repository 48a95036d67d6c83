// Spec section 3 (states and transitions) and 4.2-4.5 (create, update, remove, get), one test
// per table row, over app.inject with the fake engine; the same suite on each storage backend (LMDB, and
// PostgreSQL with its galleries fed by the change follower).
import t, { type Test } from 'tap';
import { defaultConfig } from '../../src/config/load';
import { fakePhotoB64, percentAtStep, stepReaching, type FakePhoto } from '../helpers/fake-engine';
import { BACKENDS, backendSkipReason, startBackendApp, type Backend, type BackendApp } from '../helpers/backends';

const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A clock that advances 1 s per reading, so created/updated differ visibly. */
function steppingClock(start = Date.parse('2024-05-01T10:00:00.000Z')) {
  let n = 0;
  return () => new Date(start + 1000 * n++);
}

type TestApp = BackendApp;

async function setup(t: { teardown(fn: () => unknown): void }, backend: Backend): Promise<TestApp> {
  const app = await startBackendApp(backend, { deps: { now: steppingClock() } });
  t.teardown(() => app.close());
  return app;
}

const photo = (p: FakePhoto) => fakePhotoB64(p);
const enrol = (a: TestApp, id: string, p: FakePhoto, method: 'POST' | 'PUT' = 'POST') =>
  photo(p).then((faceImage) => a.call({ method, url: `/person/face/${id}`, payload: { faceImage } }));
const identify = (a: TestApp, p: FakePhoto) =>
  photo(p).then((faceImage) => a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage } }));

// F_012: the cosine step k (cosine k/255 to an enrolled template) just at duplicate_threshold, from the
// similarity scale; one step below is no duplicate.
const DUPLICATE_THRESHOLD = defaultConfig().matching.duplicate_threshold;
const DUP_STEP = stepReaching(DUPLICATE_THRESHOLD);

// 4.2/4.3: F_001..F_012 for create and update (F_011 also for identify, in api-matching).
const faults: [string, FakePhoto][] = [
  ['F_001', { identity: 5, faces: 2 }],
  ['F_002', { identity: 5, faces: 0 }],
  ['F_003', { identity: 5, fault: 3 }],
  ['F_004', { identity: 5, fault: 4 }],
  ['F_005', { identity: 5, fault: 5 }],
  ['F_006', { identity: 5, fault: 6 }],
  ['F_007', { identity: 5, fault: 7 }],
  ['F_008', { identity: 5, fault: 8 }],
  ['F_009', { identity: 5, fault: 9 }],
  ['F_010', { identity: 5, fault: 10 }],
  ['F_011', { identity: 5, faceSize: 60 }],
  ['F_012', { identity: 1, variant: 3, cosine: DUP_STEP / 255 }],
];
const messages: Record<string, string> = {
  F_001: 'Should be one face', F_002: 'Most likely no face exists', F_003: 'Eyes are closed', F_004: 'Mouth is open',
  F_005: 'Sunglasses exist', F_006: 'Brightness is bad', F_007: 'Sharpness is bad', F_008: 'Wrong face roll',
  F_009: 'Wrong face pitch', F_010: 'Wrong face yaw', F_011: 'Wrong face size when image check', F_012: 'Face exists',
};

function personContract(t: Test, backend: Backend): void {
  t.test('state row: absent + POST, image passes -> enrolled; returns personId, created, updated', async (t) => {
    const a = await setup(t, backend);
    const res = await enrol(a, 'alice', { identity: 1 });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(Object.keys(body).sort(), ['created', 'personId', 'updated']);
    t.equal(body.personId, 'alice');
    t.match(body.created, ISO_MS_Z);
    t.equal(body.updated, body.created);
    t.equal((await a.call({ method: 'GET', url: '/person/face/alice' })).statusCode, 200);
    t.equal((await identify(a, { identity: 1, variant: 1, cosine: 0.9 })).json().personId, 'alice');
  });

  t.test('state row: enrolled + POST -> unchanged, 400 CP_002 with the person_id', async (t) => {
    const a = await setup(t, backend);
    const first = (await enrol(a, 'alice', { identity: 1 })).json();
    const res = await enrol(a, 'alice', { identity: 2 });
    t.equal(res.statusCode, 400);
    t.same(res.json(), { code: 'CP_002', message: 'Customer profile already exists with id alice' });
    t.same((await a.call({ method: 'GET', url: '/person/face/alice' })).json(), first, 'record unchanged');
    t.equal((await identify(a, { identity: 2 })).statusCode, 410, 'the refused face was not enrolled');
  });

  t.test('state row: enrolled + PUT, image passes -> reference replaced; created kept, updated new', async (t) => {
    const a = await setup(t, backend);
    const first = (await enrol(a, 'alice', { identity: 1 })).json();
    const res = await enrol(a, 'alice', { identity: 2 }, 'PUT');
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.equal(body.personId, 'alice');
    t.equal(body.created, first.created);
    t.ok(body.updated > first.updated, 'updated moved on');
    t.match(body.updated, ISO_MS_Z);
    t.equal((await identify(a, { identity: 2 })).json().personId, 'alice', 'new face matches');
    t.equal((await identify(a, { identity: 1 })).statusCode, 410, 'old face no longer matches');
    t.same((await a.call({ method: 'GET', url: '/person/face/alice' })).json(), body);
  });

  t.test('state row: absent + PUT -> 404 NF_001, still absent', async (t) => {
    const a = await setup(t, backend);
    const res = await enrol(a, 'ghost', { identity: 1 }, 'PUT');
    t.equal(res.statusCode, 404);
    t.same(res.json(), { code: 'NF_001', message: 'Face not found in collection' });
    t.equal((await a.call({ method: 'GET', url: '/person/face/ghost' })).statusCode, 404);
  });

  t.test('state row: enrolled + DELETE -> absent; data and person_id deleted; 200 body = removed person', async (t) => {
    const a = await setup(t, backend);
    const first = (await enrol(a, 'alice', { identity: 1 })).json();
    const res = await a.call({ method: 'DELETE', url: '/person/face/alice' });
    t.equal(res.statusCode, 200);
    t.same(res.json(), first);
    t.equal((await a.call({ method: 'GET', url: '/person/face/alice' })).statusCode, 404);
    t.equal((await identify(a, { identity: 1 })).statusCode, 410, 'gone from the gallery');
    t.equal(await a.store.persons.referenceImage('default', 'alice'), undefined, 'reference image deleted');
    const again = await enrol(a, 'alice', { identity: 1 });
    t.equal(again.statusCode, 200, 'the id can be enrolled again');
    t.not(again.json().created, first.created);
  });

  t.test('state row: absent + DELETE -> 404 NF_001', async (t) => {
    const a = await setup(t, backend);
    const res = await a.call({ method: 'DELETE', url: '/person/face/ghost' });
    t.equal(res.statusCode, 404);
    t.same(res.json(), { code: 'NF_001', message: 'Face not found in collection' });
  });

  t.test('4.5 get person: 200 personId, created, updated; 404 NF_001', async (t) => {
    const a = await setup(t, backend);
    const created = (await enrol(a, 'p.1_x-Y', { identity: 1 })).json();
    const res = await a.call({ method: 'GET', url: '/person/face/p.1_x-Y' });
    t.equal(res.statusCode, 200);
    t.same(res.json(), created);
    t.same((await a.call({ method: 'GET', url: '/person/face/P.1_X-Y' })).json().code, 'NF_001', 'ids are case-sensitive');
  });

  t.test('4.2 create: each enrolment criterion gives its F_ code, nothing is stored', async (t) => {
    const a = await setup(t, backend);
    await enrol(a, 'alice', { identity: 1 });
    for (const [code, p] of faults) {
      const res = await enrol(a, 'bob', p);
      t.equal(res.statusCode, 400, code);
      t.same(res.json(), { code, message: messages[code] }, code);
    }
    t.equal((await a.call({ method: 'GET', url: '/person/face/bob' })).statusCode, 404);
  });

  t.test('4.3 update: each enrolment criterion gives its F_ code, the old reference stays', async (t) => {
    const a = await setup(t, backend);
    const alice = (await enrol(a, 'alice', { identity: 1 })).json();
    await enrol(a, 'bob', { identity: 2 });
    for (const [code, p] of faults) {
      const res = await enrol(a, 'bob', code === 'F_012' ? { identity: 1, variant: 4, cosine: DUP_STEP / 255 } : p, 'PUT');
      t.same(res.json(), { code, message: messages[code] }, code);
    }
    t.equal((await identify(a, { identity: 2 })).json().personId, 'bob', 'bob unchanged');
    t.same((await a.call({ method: 'GET', url: '/person/face/alice' })).json(), alice);
  });

  t.test('enrolment rules: background faces are ignored; updating with a new photo of oneself is no duplicate', async (t) => {
    const a = await setup(t, backend);
    t.equal((await enrol(a, 'alice', { identity: 1, faces: 3, secondFacePercent: 40 })).statusCode, 200, 'small background faces');
    t.equal((await enrol(a, 'bob', { identity: 2, faces: 2, secondFacePercent: 50 })).json().code, 'F_001', 'at the ratio counts');
    t.equal((await enrol(a, 'alice', { identity: 1, variant: 7, cosine: 0.97 }, 'PUT')).statusCode, 200);
    t.equal((await enrol(a, 'carol', { identity: 1, variant: 8, cosine: 0.2 })).statusCode, 200, 'below duplicate_threshold');
  });

  t.test('F_012 at duplicate_threshold (98%); a face one step below it enrols, on create and update', async (t) => {
    const a = await setup(t, backend);
    t.equal(a.config.matching.duplicate_threshold, 98);
    t.equal(a.config.matching.duplicate_threshold, DUPLICATE_THRESHOLD);
    await enrol(a, 'alice', { identity: 1 });
    const at = `${DUP_STEP}/255 -> ${percentAtStep(DUP_STEP)}%`;
    const below = `${DUP_STEP - 1}/255 -> ${percentAtStep(DUP_STEP - 1)}%`;
    t.equal((await enrol(a, 'bob', { identity: 1, variant: 3, cosine: DUP_STEP / 255 })).json().code, 'F_012', `create at ${at}`);
    t.equal((await enrol(a, 'bob', { identity: 1, variant: 3, cosine: (DUP_STEP - 1) / 255 })).statusCode, 200, `create below: ${below}`);
    t.equal((await enrol(a, 'carol', { identity: 2 })).statusCode, 200);
    t.equal((await enrol(a, 'carol', { identity: 1, variant: 4, cosine: DUP_STEP / 255 }, 'PUT')).json().code, 'F_012', `update at ${at}`);
    t.equal((await enrol(a, 'carol', { identity: 1, variant: 4, cosine: (DUP_STEP - 1) / 255 }, 'PUT')).statusCode, 200, `update below: ${below}`);
  });

  t.test('enrolment: concurrent creates of one id -> one 200, the rest CP_002', async (t) => {
    const a = await setup(t, backend);
    const results = await Promise.all([1, 2, 3, 4].map((i) => enrol(a, 'same', { identity: 10 + i })));
    t.same(results.map((r) => r.statusCode).sort(), [200, 400, 400, 400]);
    t.same(results.filter((r) => r.statusCode === 400).map((r) => r.json().code), ['CP_002', 'CP_002', 'CP_002']);
  });
}

for (const backend of BACKENDS) {
  const skip = backendSkipReason(backend);
  t.test(`person API on ${backend}`, skip ? { skip } : {}, async (t) => personContract(t, backend));
}
