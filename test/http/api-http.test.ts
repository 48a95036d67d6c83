// The HTTP contract around the operations: spec section 5 (Api-Key, Content-Type, Request-Id),
// section 7 (R_002, R_003, 401, 403, 500 and their precedence), unknown routes, the device-only route,
// and the OpenAPI document.
import t from 'tap';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { BOOTSTRAP_KEY, startTestApp, type TestApp } from '../helpers/app';
import type { LiveFaceSource } from '../../src/device/live-face-source';

type Teardown = { teardown(fn: () => unknown): void };
async function setup(t: Teardown, opts: Parameters<typeof startTestApp>[0] = {}): Promise<TestApp> {
  const a = await startTestApp(opts);
  t.teardown(() => a.close());
  return a;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('section 5: every response has a unique Request-Id and Content-Type application/json', async (t) => {
  const a = await setup(t);
  const img = await fakePhotoB64({ identity: 1 });
  const responses = [
    await a.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage: img } }), // 200
    await a.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage: img } }), // 400
    await a.call({ method: 'GET', url: '/person/face/p1', key: null }), // 401
    await a.call({ method: 'GET', url: '/person/face/nobody' }), // 404
    await a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await fakePhotoB64({ identity: 2 }) } }), // 410
    await a.call({ method: 'GET', url: '/nowhere' }), // 404 route
    await a.call({ method: 'POST', url: '/person/face/a%zz' }), // framework error
  ];
  t.same(responses.map((r) => r.statusCode), [200, 400, 401, 404, 410, 404, 400]);
  const ids = responses.map((r) => r.headers['request-id']);
  for (const [i, r] of responses.entries()) {
    t.match(r.headers['request-id'], UUID, `request-id ${i}`);
    t.equal(r.headers['content-type'], 'application/json', `content-type ${i}`);
    t.doesNotThrow(() => JSON.parse(r.body));
  }
  t.equal(new Set(ids).size, ids.length, 'all distinct');
  const sent = await a.call({ method: 'GET', url: '/person/face/p1', headers: { 'request-id': 'mine' } });
  t.not(sent.headers['request-id'], 'mine', 'a client-sent id is not echoed');
});

t.test('section 5/7: 401 for a missing or unknown Api-Key', async (t) => {
  const a = await setup(t);
  for (const key of [null, '', 'unknown-key-000000000000']) {
    const res = await a.call({ method: 'GET', url: '/person/face/p1', key });
    t.equal(res.statusCode, 401, `key ${JSON.stringify(key)}`);
    t.same(res.json(), { code: 'UNAUTHORIZED', message: 'Unauthorized' });
  }
  t.equal((await a.call({ method: 'GET', url: '/person/face/p1', headers: { 'API-KEY': BOOTSTRAP_KEY }, key: null })).statusCode, 404, 'header name is case-insensitive');
});

t.test('section 5/7: 403 for a revoked key or a role without the permission', async (t) => {
  const a = await setup(t);
  const now = new Date().toISOString();
  const revoked = await a.store.apiKeys.create('default', 'full', '', now);
  await a.store.apiKeys.revoke(revoked.record.keyId, now);
  const enrolKey = (await a.store.apiKeys.create('default', 'enrol', '', now)).key;
  const matchKey = (await a.store.apiKeys.create('default', 'match', '', now)).key;
  const img = await fakePhotoB64({ identity: 1 });
  const forbidden = { code: 'FORBIDDEN', message: 'Forbidden' };

  const r1 = await a.call({ method: 'GET', url: '/person/face/p1', key: revoked.key });
  t.same([r1.statusCode, r1.json()], [403, forbidden], 'revoked');
  const r2 = await a.call({ method: 'POST', url: '/person/recognize-face', key: enrolKey, payload: { faceImage: img } });
  t.same([r2.statusCode, r2.json()], [403, forbidden], 'enrol role cannot identify');
  const r3 = await a.call({ method: 'POST', url: '/person/face/p1', key: matchKey, payload: { faceImage: img } });
  t.same([r3.statusCode, r3.json()], [403, forbidden], 'match role cannot enrol');
  t.equal((await a.call({ method: 'POST', url: '/person/face/p1', key: enrolKey, payload: { faceImage: img } })).statusCode, 200);
  t.equal((await a.call({ method: 'POST', url: '/person/recognize-face', key: matchKey, payload: { faceImage: img } })).statusCode, 200);
  t.equal((await a.call({ method: 'GET', url: '/person/face/p1', key: matchKey })).statusCode, 200, 'both roles can look up');
  t.equal((await a.call({ method: 'DELETE', url: '/person/face/p1', key: matchKey })).statusCode, 403);
});

const bodyRoutes: [string, string, Record<string, unknown>][] = [
  ['POST', '/person/face/p1', { faceImage: 'IMG' }],
  ['PUT', '/person/face/p1', { faceImage: 'IMG' }],
  ['POST', '/person/recognize-face', { faceImage: 'IMG' }],
  ['POST', '/person/verify-face/p1', { faceImage: 'IMG' }],
  ['POST', '/person/compare-face', { targetImage: 'IMG', sourceImage: 'IMG' }],
];
const R_002 = { code: 'R_002', message: 'Request body exception' };
const R_003 = { code: 'R_003', message: 'Fields validation exception' };

t.test('section 7 R_002: missing or unparsable body, wrong Content-Type, not an object', async (t) => {
  const a = await setup(t);
  const json = { 'content-type': 'application/json' };
  for (const [method, url] of bodyRoutes) {
    const cases: [string, Record<string, unknown>][] = [
      ['no body', {}],
      ['empty JSON body', { payload: '', headers: json }],
      ['unparsable JSON', { payload: '{"faceImage": ', headers: json }],
      ['text/plain', { payload: '{"faceImage":"x"}', headers: { 'content-type': 'text/plain' } }],
      ['no Content-Type', { payload: '{"faceImage":"x"}', headers: { 'content-type': '' } }],
      ['form', { payload: 'faceImage=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
      ['array', { payload: '[]', headers: json }],
      ['string', { payload: '"x"', headers: json }],
      ['null', { payload: 'null', headers: json }],
    ];
    for (const [name, opts] of cases) {
      const res = await a.call({ method: method as 'POST', url, ...opts });
      t.same([res.statusCode, res.json()], [400, R_002], `${method} ${url}: ${name}`);
    }
  }
  const ok = await a.call({ method: 'DELETE', url: '/person/face/p1', headers: json, payload: '' });
  t.equal(ok.statusCode, 404, 'DELETE with Content-Type json and no body is fine');
  const badDelete = await a.call({ method: 'DELETE', url: '/person/face/p1', headers: { 'content-type': 'text/plain' }, payload: 'x' });
  t.same([badDelete.statusCode, badDelete.json()], [400, R_002], 'DELETE with a non-JSON body');
  const jsonDelete = await a.call({ method: 'DELETE', url: '/person/face/p1', headers: json, payload: '{"faceImage":"x"}' });
  t.same([jsonDelete.statusCode, jsonDelete.json()], [400, R_002], 'DELETE with a JSON body: it takes none');
  const charset = await a.call({ method: 'POST', url: '/person/face/p1', headers: { 'content-type': 'application/json; charset=utf-8' }, payload: JSON.stringify({ faceImage: await fakePhotoB64({ identity: 1 }) }) });
  t.equal(charset.statusCode, 200, 'a charset parameter is fine');
});

t.test('section 7 R_003: missing, empty, non-base64, wrongly typed or unknown fields; bad person_id; bad images', async (t) => {
  const a = await setup(t, { tune: (c) => { c.image.max_bytes = 4000; c.image.max_pixels = 100 * 100; } });
  const img = await fakePhotoB64({ identity: 1 });
  const big = await fakePhotoB64({ identity: 1, width: 101, height: 100 });
  const heavy = Buffer.alloc(4001, 1).toString('base64');
  for (const [method, url, template] of bodyRoutes) {
    const fields = Object.keys(template);
    const full = Object.fromEntries(fields.map((f) => [f, img]));
    const cases: [string, Record<string, unknown>][] = [
      ['empty object', {}],
      ...fields.flatMap((f): [string, Record<string, unknown>][] => [
        [`${f} missing`, { ...full, [f]: undefined }],
        [`${f} empty`, { ...full, [f]: '' }],
        [`${f} number`, { ...full, [f]: 42 }],
        [`${f} null`, { ...full, [f]: null }],
        [`${f} object`, { ...full, [f]: { data: img } }],
        [`${f} not base64`, { ...full, [f]: 'not base64!' }],
        [`${f} url-safe base64`, { ...full, [f]: '_-_-' }],
        [`${f} not an image`, { ...full, [f]: Buffer.from('plain text, no image').toString('base64') }],
        [`${f} over max_pixels`, { ...full, [f]: big }],
        [`${f} over max_bytes`, { ...full, [f]: heavy }],
      ]),
      ['unknown field', { ...full, extra: 1 }],
    ];
    for (const [name, payload] of cases) {
      const res = await a.call({ method: method as 'POST', url, payload });
      t.same([res.statusCode, res.json()], [400, R_003], `${method} ${url}: ${name}`);
    }
  }
  const badIds = ['', 'a'.repeat(65), 'a b', 'ä', '.hidden', '-dash', 'a%2Fb', 'a*', 'a%zz'];
  for (const id of badIds) {
    for (const [method, url] of [['GET', '/person/face/'], ['DELETE', '/person/face/'], ['POST', '/person/face/'], ['PUT', '/person/face/'], ['POST', '/person/verify-face/']]) {
      if (id === '' && method === 'GET') continue; // GET /person/face/ is the device live-face route
      const payload = method === 'GET' || method === 'DELETE' ? undefined : { faceImage: img };
      const res = await a.call({ method: method as 'POST', url: url + id, payload });
      t.same([res.statusCode, res.json()], [400, R_003], `${method} ${url}${id}`);
    }
  }
  t.equal((await a.call({ method: 'GET', url: `/person/face/${'a'.repeat(64)}` })).statusCode, 404, '64 characters is fine');
  t.equal((await a.call({ method: 'POST', url: '/person/face/data-url', payload: { faceImage: `data:image/png;base64,${img}` } })).statusCode, 200, 'data URL accepted');
});

t.test('body over body_limit_bytes: 413 R_002', async (t) => {
  const a = await setup(t, { tune: (c) => { c.server.body_limit_bytes = 2048; } });
  const res = await a.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage: 'A'.repeat(4000) } });
  t.equal(res.statusCode, 413);
  t.same(res.json(), R_002);
  t.match(res.headers['request-id'], UUID);
});

t.test('500: engine failure answers INTERNAL without stack or internal message', async (t) => {
  const a = await setup(t);
  const engine = a.engine as unknown as { failWith?: Error };
  engine.failWith = new Error('SECRET internal detail at /opt/engine.cpp:42');
  const res = await a.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage: await fakePhotoB64({ identity: 1 }) } });
  t.equal(res.statusCode, 500);
  t.same(res.json(), { code: 'INTERNAL', message: 'Internal Server Error' });
  t.notMatch(res.body, /SECRET|engine\.cpp|at /);
  t.match(res.headers['request-id'], UUID);
  engine.failWith = undefined;
  t.equal((await a.call({ method: 'GET', url: '/person/face/p1' })).statusCode, 404, 'nothing was stored');
});

t.test('precedence: auth > R_002 > R_003 > CP_005 > NF_001/CP_002 > F_', async (t) => {
  const a = await setup(t, { tune: (c) => { c.quota.requests_per_day = 1; } });
  const img = await fakePhotoB64({ identity: 1 });
  t.equal((await a.call({ method: 'POST', url: '/person/face/bad id', key: null, payload: '{', headers: { 'content-type': 'application/json' } })).statusCode, 401, '401 before R_002');
  t.same((await a.call({ method: 'POST', url: '/person/face/bad id' })).json(), R_002, 'R_002 before R_003 (bad id, no body)');
  await a.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: img } });
  t.same((await a.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: await fakePhotoB64({ identity: 1, faces: 0 }) } })).json().code, 'CP_002', 'CP_002 before F_002');
  t.same((await a.call({ method: 'PUT', url: '/person/face/ghost', payload: { faceImage: await fakePhotoB64({ identity: 1, faces: 0 }) } })).json().code, 'NF_001', 'NF_001 before F_002');
  t.same((await a.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: 'x!' } })).json(), R_003, 'R_003 before CP_002');
  t.equal((await a.call({ method: 'GET', url: '/person/face/ghost' })).json().code, 'NF_001', 'uses the one request of the day');
  t.same((await a.call({ method: 'GET', url: '/person/face/ghost' })).json().code, 'CP_005', 'CP_005 before NF_001');
  t.same((await a.call({ method: 'POST', url: '/person/verify-face/ghost', payload: { faceImage: 'x!' } })).json(), R_003, 'R_003 before CP_005');
});

t.test('unknown routes: 404 NOT_FOUND; known path with another method: 405 with Allow', async (t) => {
  const a = await setup(t);
  const nf = await a.call({ method: 'GET', url: '/person/faces/x', key: null });
  t.same([nf.statusCode, nf.json()], [404, { code: 'NOT_FOUND', message: 'Route not found' }]);
  const na = await a.call({ method: 'PATCH', url: '/person/face/x' });
  t.same([na.statusCode, na.json()], [405, { code: 'METHOD_NOT_ALLOWED', message: 'Method not allowed' }]);
  t.equal(na.headers.allow, 'DELETE, GET, POST, PUT');
  t.equal((await a.call({ method: 'GET', url: '/person/recognize-face' })).headers.allow, 'POST');
});

t.test('4.1 GET /person/face/: cloud 404 NOT_FOUND', async (t) => {
  const a = await setup(t);
  const res = await a.call({ method: 'GET', url: '/person/face/' });
  t.same([res.statusCode, res.json()], [404, { code: 'NOT_FOUND', message: 'Route not found' }]);
});

t.test('4.1 GET /person/face/ (device): R_400 without camera, R_404 without live face, 200 faceKey + faceImage', async (t) => {
  const none = await setup(t, { tune: (c) => { c.server.mode = 'device'; } });
  const r400 = await none.call({ method: 'GET', url: '/person/face/' });
  t.same([r400.statusCode, r400.json()], [400, { code: 'R_400', message: 'Camera is not connected' }]);
  t.equal((await none.call({ method: 'GET', url: '/person/face/', key: null })).statusCode, 401);

  let live: { faceKey: string; faceImage: string } | null = null;
  const camera: LiveFaceSource = { connected: () => true, latest: async () => live };
  const dev = await setup(t, { tune: (c) => { c.server.mode = 'device'; }, deps: { camera } });
  const r404 = await dev.call({ method: 'GET', url: '/person/face/' });
  t.same([r404.statusCode, r404.json()], [400, { code: 'R_404', message: 'Face not found, or did not pass the liveness check' }]);
  live = { faceKey: 'k1', faceImage: 'aGVsbG8=' };
  const ok = await dev.call({ method: 'GET', url: '/person/face/' });
  t.same([ok.statusCode, ok.json()], [200, live]);
  t.equal(ok.headers['content-type'], 'application/json');
});

t.test('OpenAPI: /openapi.json and /docs are public and describe every route', async (t) => {
  for (const mode of ['cloud', 'device'] as const) {
    const a = await setup(t, { tune: (c) => { c.server.mode = mode; } });
    const res = await a.call({ method: 'GET', url: '/openapi.json', key: null });
    t.equal(res.statusCode, 200);
    const doc = res.json();
    t.match(doc.openapi, /^3\./);
    t.equal(doc.info.version, '6.0.0');
    t.same(doc.components.securitySchemes.ApiKey, { type: 'apiKey', in: 'header', name: 'Api-Key' });
    const paths = Object.keys(doc.paths).sort();
    const expected = ['/person/compare-face', '/person/face/{person_id}', '/person/recognize-face', '/person/verify-face/{person_id}'];
    if (mode === 'device') expected.push('/person/face/');
    t.same(paths.filter((p) => p.startsWith('/person/')), expected.sort(), `${mode} person paths`);
    // The operators' half (accounts, licences, the licence server) is the cloud's alone.
    const operators = paths.filter((p) => !p.startsWith('/person/'));
    if (mode === 'device') t.same(operators, [], 'a device serves no account or licence route');
    else {
      for (const p of ['/account/v1/register', '/account/v1/sessions', '/account/v1/keys', '/account/v1/licences', '/licence/v1/check', '/licence/v1/public-key', '/licence/v1/package']) {
        t.ok(operators.includes(p), `cloud documents ${p}`);
      }
      t.same(doc.components.securitySchemes.OperatorSession, { type: 'http', scheme: 'bearer' }, 'operator sessions are a bearer scheme');
      t.same(doc.paths['/account/v1/licences'].get.security, [{ OperatorSession: [] }], 'operator routes name the bearer scheme');
      t.notOk(doc.paths['/account/v1/register'].post.security, 'registration needs no session');
    }
    t.same(Object.keys(doc.paths['/person/face/{person_id}']).sort(), ['delete', 'get', 'post', 'put']);
    const compare200 = doc.paths['/person/compare-face'].post.responses['200'].content['application/json'].schema;
    t.same(Object.keys(compare200.properties), [mode === 'cloud' ? 'facesMatched' : 'similarity']);
    t.ok(doc.paths['/person/recognize-face'].post.responses['410'], 'RF_001 documented');
    const docs = await a.call({ method: 'GET', url: '/docs', key: null });
    t.ok([200, 302].includes(docs.statusCode), '/docs served');
  }
});

t.test('cloud: PATCH /person/face/ lists only the methods of /person/face/{person_id}', async (t) => {
  const a = await setup(t);
  const res = await a.call({ method: 'PATCH', url: '/person/face/' });
  t.equal(res.statusCode, 405);
  t.equal(res.headers.allow, 'DELETE, GET, POST, PUT');
});
