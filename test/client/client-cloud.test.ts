// The client package (client/) against a real cloud-mode service process: every method with every kind of
// input, one test per error class of the spec (section 7) plus the generic ones, the safe-retry rules on a
// real 503, timeouts and cancellation, enterprise request signing with verified answers, and the API version
// check. The process runs the service's own start-up with the fake engine (test/helpers/client/service-main.ts).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import * as client from '../../client/src/node';
import { FaceCheckClient } from '../../client/src/node';
import { fakePhoto, type FakePhoto } from '../helpers/fake-engine';
import { FAILING_IDENTITY, HELD_IDENTITY } from '../helpers/client/identities';
import { startClientTestService, type ClientTestService } from '../helpers/client/services';

const CLOUD_INI = ['[server]', 'mode = cloud', 'body_limit_bytes = 65536', 'max_engine_queue = 1', '[camera]', 'source = none'];

let service: ClientTestService;
t.before(async () => {
  service = await startClientTestService(t as unknown as Test, CLOUD_INI);
});

const photo = (p: FakePhoto) => fakePhoto(p);
const clientFor = (o: Partial<client.NodeClientOptions> = {}) => new FaceCheckClient({ baseUrl: service.baseUrl, apiKey: service.apiKey, ...o });

/** Resolves with the error the promise rejects with (fails the test when it resolves). */
async function rejection(t: Test, p: Promise<unknown>): Promise<any> {
  try {
    const value = await p;
    t.fail(`resolved with ${JSON.stringify(value)}`);
    return undefined;
  } catch (err) {
    return err;
  }
}

/** The service answered a face-analysis request with 503 (the held analysis occupies max_engine_queue = 1). */
async function untilBusy(): Promise<void> {
  const probe = clientFor({ retries: 0 });
  const image = await photo({ identity: 7 });
  for (let i = 0; i < 250; i++) {
    try {
      await probe.compare(image, image);
    } catch (err) {
      if (err instanceof client.ServiceUnavailableError) return;
      throw err;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the service never became busy');
}

t.test('every method, with a Buffer, a Uint8Array, an ArrayBuffer, a file path and base64', async (t) => {
  const c = clientFor();
  t.equal(await c.mode(), 'cloud');
  const alice = await photo({ identity: 101 });
  const file = path.join(service.dir, 'alice.png');
  fs.writeFileSync(file, alice);

  const created = await c.createPerson('alice', file);
  t.equal(created.personId, 'alice');
  t.match(created.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal(created.created, created.updated);
  t.same(await c.getPerson('alice'), created, 'getPerson');
  t.equal((await c.identify(new Uint8Array(await photo({ identity: 101, variant: 1, cosine: 0.99 })))).personId, 'alice',
    'identify with a Uint8Array');
  const probe = await photo({ identity: 101, variant: 2, cosine: 0.99 });
  t.equal((await c.verify('alice', new Uint8Array(probe).buffer)).personId, 'alice',
    'verify with an ArrayBuffer');
  const updated = await c.updatePerson('alice', { faceImage: (await photo({ identity: 101, variant: 3, cosine: 0.99 })).toString('base64') });
  t.equal(updated.created, created.created, 'update keeps created');
  t.ok(updated.updated >= created.updated);
  t.same(await c.compare(alice, await photo({ identity: 101, variant: 4, cosine: 0.99 })), { matched: true, similarity: null },
    'cloud compare: matched, no similarity');
  t.same(await c.compare(alice, await photo({ identity: 102 })), { matched: false, similarity: null });
  t.same(await c.removePerson('alice'), updated, 'remove answers the removed person');
  const gone = await rejection(t, c.getPerson('alice'));
  t.ok(gone instanceof client.PersonNotFoundError);
});

interface ErrorCase {
  Class: new (...a: any[]) => client.ServiceError;
  code: string;
  status: number;
  call: (c: FaceCheckClient) => Promise<unknown>;
}

const F = (n: number) => `F_${String(n).padStart(3, '0')}`;
const cases: Record<string, ErrorCase> = {
  [F(1)]: { Class: client.NotOneFaceError, code: F(1), status: 400, call: async (c) => c.createPerson('f1', await photo({ identity: 201, faces: 2 })) },
  [F(2)]: { Class: client.NoFaceError, code: F(2), status: 400, call: async (c) => c.createPerson('f2', await photo({ identity: 202, faces: 0 })) },
  [F(3)]: { Class: client.EyesClosedError, code: F(3), status: 400, call: async (c) => c.createPerson('f3', await photo({ identity: 203, fault: 3 })) },
  [F(4)]: { Class: client.MouthOpenError, code: F(4), status: 400, call: async (c) => c.createPerson('f4', await photo({ identity: 204, fault: 4 })) },
  [F(5)]: { Class: client.SunglassesError, code: F(5), status: 400, call: async (c) => c.createPerson('f5', await photo({ identity: 205, fault: 5 })) },
  [F(6)]: { Class: client.BadBrightnessError, code: F(6), status: 400, call: async (c) => c.createPerson('f6', await photo({ identity: 206, fault: 6 })) },
  [F(7)]: { Class: client.BadSharpnessError, code: F(7), status: 400, call: async (c) => c.createPerson('f7', await photo({ identity: 207, fault: 7 })) },
  [F(8)]: { Class: client.WrongFaceRollError, code: F(8), status: 400, call: async (c) => c.createPerson('f8', await photo({ identity: 208, fault: 8 })) },
  [F(9)]: { Class: client.WrongFacePitchError, code: F(9), status: 400, call: async (c) => c.createPerson('f9', await photo({ identity: 209, fault: 9 })) },
  [F(10)]: { Class: client.WrongFaceYawError, code: F(10), status: 400, call: async (c) => c.createPerson('f10', await photo({ identity: 210, fault: 10 })) },
  [F(11)]: { Class: client.WrongFaceSizeError, code: F(11), status: 400, call: async (c) => c.identify(await photo({ identity: 211, faceSize: 40 })) },
  [F(12)]: {
    Class: client.FaceExistsError, code: F(12), status: 400,
    call: async (c) => {
      await c.createPerson('f12-first', await photo({ identity: 212 }));
      return c.createPerson('f12-second', await photo({ identity: 212, variant: 1, cosine: 0.999 }));
    },
  },
  CP_002: {
    Class: client.PersonExistsError, code: 'CP_002', status: 400,
    call: async (c) => {
      await c.createPerson('taken', await photo({ identity: 301 }));
      return c.createPerson('taken', await photo({ identity: 302 }));
    },
  },
  R_002: { Class: client.RequestBodyError, code: 'R_002', status: 413, call: (c) => c.identify(new Uint8Array(70_000)) },
  R_003: { Class: client.FieldsValidationError, code: 'R_003', status: 400, call: (c) => c.getPerson('not a valid id') },
  NF_001: { Class: client.PersonNotFoundError, code: 'NF_001', status: 404, call: (c) => c.removePerson('nobody') },
  RF_001: { Class: client.NoPersonMatchedError, code: 'RF_001', status: 410, call: async (c) => c.identify(await photo({ identity: 401 })) },
  UNAUTHORIZED: { Class: client.UnauthorizedError, code: 'UNAUTHORIZED', status: 401, call: (c) => clientFor({ apiKey: 'fc_unknown' }).getPerson('x') },
  FORBIDDEN: {
    Class: client.ForbiddenError, code: 'FORBIDDEN', status: 403,
    call: async () => clientFor({ apiKey: service.enrolKey }).identify(await photo({ identity: 501 })),
  },
  INTERNAL: { Class: client.InternalServerError, code: 'INTERNAL', status: 500, call: async (c) => c.identify(await photo({ identity: FAILING_IDENTITY })) },
  NOT_FOUND: { Class: client.OperationNotSupportedError, code: 'NOT_FOUND', status: 404, call: (c) => c.liveFace() },
};

for (const [code, e] of Object.entries(cases)) {
  t.test(`${code}: ${e.Class.name}`, async (t) => {
    const err = await rejection(t, e.call(clientFor()));
    t.ok(err instanceof e.Class, `${err?.name}: ${err?.message}`);
    t.ok(err instanceof client.ServiceError);
    t.equal(err.code, e.code);
    t.equal(err.status, e.status);
    t.match(err.requestId, /^[0-9a-f-]{36}$/, 'the Request-Id of the answer');
    t.type(err.message, 'string');
    t.ok(err.message.length > 0);
    if (code.startsWith('F_')) t.ok(err instanceof client.FaceCheckFailedError, 'an enrolment check');
  });
}

t.test('SERVICE_UNAVAILABLE: a 503 with Retry-After, thrown once retries are off or spent', async (t) => {
  service.gate.close();
  const held = clientFor().identify(await photo({ identity: HELD_IDENTITY })).catch((err: unknown) => err);
  try {
    await untilBusy();
    const err = await rejection(t, clientFor({ retries: 0 }).compare(await photo({ identity: 8 }), await photo({ identity: 8 })));
    t.ok(err instanceof client.ServiceUnavailableError);
    t.equal(err.code, 'SERVICE_UNAVAILABLE');
    t.equal(err.status, 503);
    t.equal(err.retryAfterSeconds, 1);
    t.match(err.requestId, /^[0-9a-f-]{36}$/);
    const s = service.signing;
    const signed = await rejection(t, clientFor({ apiKey: s.apiKey, signingKey: s.signingKey, servicePublicKey: s.servicePublicKey, retries: 0 })
      .compare(await photo({ identity: 9 }), await photo({ identity: 9 })));
    t.ok(signed instanceof client.ServiceUnavailableError, `a signing key's 503 is signed too: ${String(signed)}`);
  } finally {
    service.gate.open();
  }
  t.ok((await held) instanceof client.NoPersonMatchedError, 'the held request ends');
});

/** A fetch that counts attempts and their statuses, and runs `on503` at the first 503. */
function countingFetch(on503: () => void = () => undefined) {
  const statuses: number[] = [];
  const f: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!String(input).endsWith('/openapi.json')) {
      statuses.push(res.status);
      if (res.status === 503 && statuses.filter((s) => s === 503).length === 1) on503();
    }
    return res;
  };
  return { statuses, fetch: f };
}

t.test('retries: an identify answered 503 + Retry-After is sent again after the delay and succeeds', async (t) => {
  const c = clientFor();
  await c.createPerson('rita', await photo({ identity: 601 }));
  service.gate.close();
  const held = clientFor().identify(await photo({ identity: HELD_IDENTITY })).catch((err: unknown) => err);
  await untilBusy();
  const counted = countingFetch(() => service.gate.open());
  const started = Date.now();
  const found = await clientFor({ fetch: counted.fetch }).identify(await photo({ identity: 601, variant: 1, cosine: 0.99 }));
  t.equal(found.personId, 'rita');
  t.same(counted.statuses, [503, 200], 'one 503, then the retry');
  t.ok(Date.now() - started >= 1000, 'the retry waited Retry-After (1 s)');
  t.ok((await held) instanceof client.NoPersonMatchedError, 'the held request ends');
});

t.test('retries: a create answered 503 is not sent again; the person was not created', async (t) => {
  service.gate.close();
  const held = clientFor().identify(await photo({ identity: HELD_IDENTITY })).catch((err: unknown) => err);
  try {
    await untilBusy();
    const counted = countingFetch();
    const err = await rejection(t, clientFor({ fetch: counted.fetch }).createPerson('carol', await photo({ identity: 602 })));
    t.ok(err instanceof client.ServiceUnavailableError);
    t.equal(err.retryAfterSeconds, 1, 'the caller learns when to try again');
    t.same(counted.statuses, [503], 'one attempt only');
  } finally {
    service.gate.open();
  }
  t.ok((await held) instanceof client.NoPersonMatchedError, 'the held request ends');
  t.ok(await rejection(t, clientFor().getPerson('carol')) instanceof client.PersonNotFoundError, 'nothing was enrolled');
  t.equal((await clientFor().createPerson('carol', await photo({ identity: 602 }))).personId, 'carol', 'the caller\'s own retry enrols');
});

t.test('timeouts and cancellation', async (t) => {
  service.gate.close();
  try {
    const slow = await photo({ identity: HELD_IDENTITY });
    const timedOut = await rejection(t, clientFor({ timeoutMs: 300 }).identify(slow));
    t.ok(timedOut instanceof client.RequestTimeoutError, String(timedOut));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const aborted = await rejection(t, clientFor().identify(slow, { signal: controller.signal }));
    t.equal(aborted.name, 'AbortError', 'the signal\'s reason');
    const already = await rejection(t, clientFor().getPerson('x', { signal: AbortSignal.abort() }));
    t.equal(already.name, 'AbortError', 'an aborted signal sends nothing');
  } finally {
    service.gate.open();
  }
});

t.test('signing keys: requests signed, every answer verified, repeated requests are not replays', async (t) => {
  const s = service.signing;
  const c = clientFor({ apiKey: s.apiKey, signingKey: s.signingKey, servicePublicKey: s.servicePublicKey });
  const image = await photo({ identity: 701 });
  t.equal((await c.createPerson('sam', image)).personId, 'sam');
  for (let i = 0; i < 3; i++) t.equal((await c.getPerson('sam')).personId, 'sam', `the same GET again (${i + 1})`);
  t.equal((await c.identify(image)).personId, 'sam');
  t.equal((await c.identify(image)).personId, 'sam', 'the same identify again');
  const err = await rejection(t, c.getPerson('nobody'));
  t.ok(err instanceof client.PersonNotFoundError, 'a signed error answer is a typed error');
  t.same(await c.removePerson('sam').then((p) => p.personId), 'sam');

  const other = (await import('../../src/storage/records')).generateRsaKeyPair;
  const wrongKey = clientFor({ apiKey: s.apiKey, signingKey: s.signingKey, servicePublicKey: (await other()).publicKey });
  const refused = await rejection(t, wrongKey.getPerson('somebody-else'));
  t.ok(refused instanceof client.ResponseSignatureError, 'an answer signed by another key is refused');
  t.match(refused.message, /does not verify/);
  t.equal(refused.status, 404);

  const unsigned = clientFor({ signingKey: s.signingKey, servicePublicKey: s.servicePublicKey });
  const bare = await rejection(t, unsigned.getPerson('nobody'));
  t.ok(bare instanceof client.ResponseSignatureError, 'an unsigned answer is refused');
  t.match(bare.message, /no Signature/);
  t.equal(bare.unverifiedCode, 'NF_001', 'what it claimed, for diagnosis');

  const unsignedRequests = await rejection(t, clientFor({ apiKey: s.apiKey }).getPerson('x'));
  t.ok(unsignedRequests instanceof client.UnauthorizedError, 'a signing key without signing is 401');
  t.throws(() => clientFor({ signingKey: s.signingKey }), /servicePublicKey/, 'no signing without verification');
});

t.test('keep-alive: consecutive calls reuse their connections to the service', async (t) => {
  // The real service does not log connections: a socket count at the TCP level, on its own port, through a
  // pass-through proxy that opens one upstream connection per client connection.
  const net = await import('node:net');
  const target = new URL(service.baseUrl);
  let connections = 0;
  const proxy = net.createServer((socket) => {
    connections++;
    const upstream = net.connect(Number(target.port), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { proxy.close(() => r()); }));
  const c = new FaceCheckClient({ baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey: service.apiKey });
  for (let i = 0; i < 10; i++) await c.getPerson('nobody').catch(() => undefined);
  // fetch (undici) may open another socket for a request sent the moment the previous answer was read, before
  // that socket is back in its pool (usually two in all); without keep-alive it would be one per request (11).
  t.ok(connections <= 5, `the version probe and ten calls over ${connections} connection(s)`);
});

t.test('NetworkError: a refused connection; reads are tried again, a create is not', async (t) => {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise<void>((r) => server.close(() => r()));  // nothing listens there now
  let attempts = 0;
  const counting: typeof fetch = (input, init) => { attempts++; return fetch(input, init); };
  const c = new FaceCheckClient({ baseUrl, apiKey: 'k', checkVersion: false, fetch: counting });
  const read = await rejection(t, c.getPerson('alice'));
  t.ok(read instanceof client.NetworkError, String(read));
  t.match(read.message, /ECONNREFUSED/);
  t.equal(attempts, 3, 'getPerson: the first attempt and two retries');
  attempts = 0;
  t.ok(await rejection(t, c.createPerson('alice', await photo({ identity: 1 }))) instanceof client.NetworkError);
  t.equal(attempts, 1, 'createPerson: once');
  attempts = 0;
  t.ok(await rejection(t, c.removePerson('alice')) instanceof client.NetworkError);
  t.equal(attempts, 1, 'removePerson: once (a lost answer may mean it was done)');
});

t.test('a service of another API version, or not face-check, is a clear ApiVersionError', async (t) => {
  let doc: unknown = { openapi: '3.0.3', info: { title: 'face-check person API (cloud mode)', version: '7.1.0' }, paths: {} };
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    if (req.url === '/openapi.json' && doc) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    else res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>no</h1>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const err = await rejection(t, new FaceCheckClient({ baseUrl, apiKey: 'k' }).getPerson('alice'));
  t.ok(err instanceof client.ApiVersionError);
  t.equal(err.serviceVersion, '7.1.0');
  t.match(err.message, /speaks API v7\.1\.0; this client speaks v6\.0\.0/);
  t.equal(hits, 1, 'no operation is sent to it');
  doc = undefined;
  const none = await rejection(t, new FaceCheckClient({ baseUrl, apiKey: 'k' }).getPerson('alice'));
  t.ok(none instanceof client.ApiVersionError);
  t.match(none.message, /not a face-check service/);
});

t.test('CP_005: QuotaExceededError once the account\'s daily quota is used up', async (t) => {
  const quoted = await startClientTestService(t, ['[server]', 'mode = cloud', '[camera]', 'source = none', '[quota]', 'requests_per_day = 1']);
  const c = new FaceCheckClient({ baseUrl: quoted.baseUrl, apiKey: quoted.apiKey });
  await c.createPerson('quinn', await photo({ identity: 801 }));
  t.equal((await c.getPerson('quinn')).personId, 'quinn', 'the one metered request of the day');
  const err = await rejection(t, c.getPerson('quinn'));
  t.ok(err instanceof client.QuotaExceededError, String(err));
  t.equal(err.code, 'CP_005');
  t.equal(err.status, 400);
  t.match(err.requestId, /^[0-9a-f-]{36}$/);
});
