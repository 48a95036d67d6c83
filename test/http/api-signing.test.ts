// [spec 5] Enterprise request signing: a key with a signing key is accepted only with a valid, fresh,
// unused signature of base URL + URI + body + Timestamp (SHA-256, RSA), checked before the body is judged;
// the responses to it carry the service's Signature and Timestamp. Keys without one are unchanged.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';
import type { ApiError } from '../../src/errors';
import { checkedPublicKey, RequestSigning, type SignedRequest } from '../../src/services/request-signing';
import { generateRsaKeyPair } from '../../src/storage/records';
import { openStore } from '../../src/storage/lmdb/store';
import { testErrorCatalog } from '../helpers/errors';

const BASE = 'https://faces.example.com';

interface SignOptions { body?: string; timestamp?: number | string; signWith?: string; signedBody?: string; host?: string; signature?: string }

function signedRequest(a: TestApp, apiKey: string, privateKey: string) {
  return (method: 'GET' | 'POST' | 'DELETE', url: string, o: SignOptions = {}) => {
    const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
    const body = o.body ?? '';
    const text = `${o.host ?? BASE}${url}${o.signedBody ?? body}${timestamp}`;
    const signature = o.signature ?? crypto.sign('sha256', Buffer.from(text), o.signWith ?? privateKey).toString('base64');
    return a.app.inject({
      method, url, payload: body || undefined,
      headers: { 'api-key': apiKey, 'content-type': 'application/json', signature, timestamp },
    });
  };
}

async function signingApp(t: { teardown(fn: () => unknown): void }, publicBaseUrl = BASE) {
  const a = await startTestApp({ tune: (c) => { c.auth.public_base_url = publicBaseUrl; } });
  t.teardown(() => a.close());
  const pair = await generateRsaKeyPair();
  const { key } = await a.store.apiKeys.create('ent', 'full', 'enterprise', new Date().toISOString(), pair.publicKey);
  return { a, key, pair, send: signedRequest(a, key, pair.privateKey) };
}

t.test('a signed request passes and its response is signed by the service', async (t) => {
  const { a, send } = await signingApp(t);
  const body = JSON.stringify({ faceImage: await fakePhotoB64({ identity: 1 }) });
  const res = await send('POST', '/person/face/alice', { body });
  t.equal(res.statusCode, 200, res.body);
  const service = await a.store.serviceKeys.responseSigning();
  const ts = String(res.headers.timestamp);
  t.match(ts, /^\d+$/);
  t.ok(crypto.verify('sha256', Buffer.from(`${BASE}/person/face/alice${res.body}${ts}`), service.publicKey,
    Buffer.from(String(res.headers.signature), 'base64')), 'response signature verifies with the service public key');
  t.notOk(crypto.verify('sha256', Buffer.from(`${BASE}/person/face/alice${res.body}x${ts}`), service.publicKey,
    Buffer.from(String(res.headers.signature), 'base64')), 'and only for that body');

  const got = await send('GET', '/person/face/alice');
  t.equal(got.statusCode, 200, 'GET: the empty body is signed');
  t.equal(got.json().personId, 'alice');
  const missing = await send('GET', '/person/face/nobody');
  t.equal(missing.statusCode, 404, 'signature fine, person missing');
  t.ok(missing.headers.signature, 'error responses are signed too');
  t.equal((await a.store.serviceKeys.responseSigning()).publicKey, service.publicKey, 'one service key, kept');
});

t.test('unsigned, stale, tampered, replayed or foreign signatures are 401', async (t) => {
  const { a, key, send } = await signingApp(t);
  const foreign = (await generateRsaKeyPair()).privateKey;
  const now = Math.floor(Date.now() / 1000);  // the exact 300 s bound is tested with a fixed clock below
  const unsigned = await a.call({ method: 'GET', url: '/person/face/x', key });
  t.equal(unsigned.statusCode, 401);

  const cases: [string, SignOptions][] = [
    ['timestamp 330 s old', { timestamp: now - 330 }],
    ['timestamp 330 s ahead', { timestamp: now + 330 }],
    ['timestamp in ms', { timestamp: Date.now() }],
    ['timestamp not a number', { timestamp: '2026-11-22T00:00:00Z' }],
    ['signature not base64', { signature: 'not base64!' }],
    ['body changed after signing', { body: '{"a":1}', signedBody: '{"a":2}' }],
    ['signed for another host', { host: 'https://evil.example.com' }],
    ['signed by another key', { signWith: foreign }],
  ];
  for (const [what, o] of cases) {
    const res = await send(o.body ? 'POST' : 'GET', o.body ? '/person/recognize-face' : '/person/face/x', o);
    t.equal(res.statusCode, 401, what);
    t.same(res.json(), { code: 'UNAUTHORIZED', message: 'Unauthorized' }, what);
  }

  const fixed = { timestamp: now };
  t.equal((await send('GET', '/person/face/x', fixed)).statusCode, 404, 'first use accepted');
  const again = await send('GET', '/person/face/x', fixed);
  t.equal(again.statusCode, 401, 'the same signature again is a replay');
});

t.test('RequestSigning says why it refuses (the 401 detail, logged under the Request-Id)', async (t) => {
  const pair = await generateRsaKeyPair();
  let clock = new Date('2026-11-22T10:00:00Z');
  const dir = tempDir();
  const store = await openStore(path.join(dir, 'db'));
  t.teardown(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const signing = new RequestSigning(testErrorCatalog(), async () => pair, 300, () => clock, store.requestSignatures);
  const ts = String(clock.getTime() / 1000);
  const good = crypto.sign('sha256', Buffer.from(`${BASE}/u{}${ts}`), pair.privateKey).toString('base64');
  const request = (o: Partial<SignedRequest>): SignedRequest =>
    ({ publicKey: pair.publicKey, baseUrl: BASE, uri: '/u', body: '{}', signature: good, timestamp: ts, ...o });
  const refusal = async (o: Partial<SignedRequest>) => {
    try {
      await signing.verifyRequest(request(o));
      return 'accepted';
    } catch (err) {
      t.equal((err as ApiError).statusCode, 401);
      return String((err as ApiError).detail);
    }
  };
  t.match(await refusal({ signature: undefined }), /Signature and Timestamp headers needed/);
  t.match(await refusal({ timestamp: '1.5' }), /Unix time in seconds/);
  t.match(await refusal({ signature: '***' }), /base64/);
  t.match(await refusal({ signature: good.replace(/=+$/, '') }), /canonical/, 'unpadded');
  t.match(await refusal({ signature: Buffer.from(good, 'base64').subarray(1).toString('base64') }), /256 bytes/, 'shorter than the modulus');
  t.match(await refusal({ body: '{ }' }), /does not verify/);
  t.match(await refusal({ publicKey: 'not a key' }), /does not verify/, 'an unusable key is a failed check, not a crash');
  clock = new Date(clock.getTime() + 301_000);
  t.match(await refusal({}), /more than 300 s/);
  clock = new Date(clock.getTime() - 301_000);
  t.equal(await refusal({}), 'accepted');
  t.match(await refusal({}), /replay/);
  clock = new Date(clock.getTime() + 601_000);
  const later = String(clock.getTime() / 1000);
  const fresh = crypto.sign('sha256', Buffer.from(`${BASE}/u{}${later}`), pair.privateKey).toString('base64');
  t.equal(await refusal({ timestamp: later, signature: fresh }), 'accepted', 'old entries of the replay cache expire');

  const { signature, timestamp } = await signing.signResponse(BASE, '/u', '{"ok":1}');
  t.ok(crypto.verify('sha256', Buffer.from(`${BASE}/u{"ok":1}${timestamp}`), pair.publicKey, Buffer.from(signature, 'base64')));
});

t.test('checkedPublicKey takes RSA keys of 2048 bits or more only', async (t) => {
  const rsa = await generateRsaKeyPair();
  t.equal(checkedPublicKey(rsa.publicKey), rsa.publicKey);
  const small = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' });
  t.throws(() => checkedPublicKey(String(small)), /at least 2048 bits, got rsa 1024/);
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
  t.throws(() => checkedPublicKey(String(ec)), /got ec/);
  t.throws(() => checkedPublicKey('hello'), /not a public key/);
});

t.test('the signature is judged before the body', async (t) => {
  const { send } = await signingApp(t);
  const bad = '{"faceImage": ';
  const forged = await send('POST', '/person/recognize-face', { body: bad, signedBody: '{}' });
  t.equal(forged.statusCode, 401, 'an unparsable body with a bad signature: 401, not R_002');
  const honest = await send('POST', '/person/recognize-face', { body: bad });
  t.equal(honest.statusCode, 400);
  t.equal(honest.json().code, 'R_002', 'a signed unparsable body: R_002');
});

t.test('without [auth] public_base_url the base URL is the request\'s protocol and Host', async (t) => {
  const a = await startTestApp();
  t.teardown(() => a.close());
  const pair = await generateRsaKeyPair();
  const { key } = await a.store.apiKeys.create('ent', 'full', '', new Date().toISOString(), pair.publicKey);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const sig = (base: string) => crypto.sign('sha256', Buffer.from(`${base}/person/face/x${timestamp}`), pair.privateKey).toString('base64');
  const call = (signature: string) => a.app.inject({
    method: 'GET', url: '/person/face/x', headers: { host: 'faces.test:8443', 'api-key': key, signature, timestamp },
  });
  t.equal((await call(sig('https://faces.example.com'))).statusCode, 401);
  t.equal((await call(sig('http://faces.test:8443'))).statusCode, 404);
});

t.test('keys without a signing key are not asked for signatures, nor get them', async (t) => {
  const { a } = await signingApp(t);
  const { key } = await a.store.apiKeys.create('plain', 'full', '', new Date().toISOString());
  const res = await a.call({ method: 'GET', url: '/person/face/x', key });
  t.equal(res.statusCode, 404);
  t.equal(res.headers.signature, undefined);
  t.equal((await a.call({ method: 'GET', url: '/person/face/x' })).headers.signature, undefined, 'bootstrap key');
});
