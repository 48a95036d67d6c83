// The licence server's check-in over HTTP (POST /licence/v1/check, cloud mode, app.inject): the first check
// binds, the answer is a document signed with the service key carrying the licence and the check's nonce and
// fingerprint, another device is refused until release, revoked / expired / unknown keys are refused, bad
// bodies are R_003, and reported usage is summed per day and operation.
import crypto from 'node:crypto';
import path from 'node:path';
import t, { type Test } from 'tap';
import { checkDocumentFor, verifyLicenceDocument, type LicenceDocument } from '../../src/licensing/licence-document';
import { LicenceServer } from '../../src/licensing/cloud/licence-server';
import type { LicenceView } from '../../src/licensing/cloud/licences';
import { startTestApp, type TestApp } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { writeTinyTarball } from '../helpers/tiny-package';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';

const CHECK = '/licence/v1/check';

interface Cloud {
  a: TestApp;
  clock: { now: Date };
  licence(input?: { grants?: string[]; maxPersons?: number | null; expires?: string | null }): Promise<LicenceView>;
  check(body: unknown): Promise<{ status: number; body: any }>;
}

async function cloud(t: Test): Promise<Cloud> {
  const clock = { now: new Date('2030-05-06T07:08:09.000Z') };
  const a = await startTestApp({
    tune: (c) => {
      c.server.mode = 'cloud';
      c.licensing.check_interval_seconds = 120;
      c.licensing.document_valid_seconds = 3600;
      c.licensing.public_url = 'https://cloud.example.com';
      // A small package file: the licence lines' commands name its hash, and nothing is packed.
      c.licensing.package_file = writeTinyTarball(path.dirname(c.storage.path));
    },
    deps: { now: () => clock.now },
  });
  t.teardown(() => a.close());
  const at = clock.now.toISOString();
  await a.store.accounts.create({ accountId: 'acme', email: 'ops@acme.example', passwordHash: 'unused', role: 'operator', plan: 'paid', created: at, updated: at });
  return {
    a, clock,
    licence: (input = {}) => a.app.licences.create('acme', { label: 'gate', grants: input.grants ?? ['identify', 'verify'], maxPersons: input.maxPersons, expires: input.expires }, { byAdministrator: true }),
    check: async (body) => {
      const res = await a.call({ method: 'POST', url: CHECK, key: null, payload: body as object });
      return { status: res.statusCode, body: res.json() };
    },
  };
}

const fingerprint = (device: number) => crypto.createHash('sha256').update(`board ${device}`).digest('hex');
const nonce = () => crypto.randomBytes(18).toString('base64url');
const body = (licenceKey: string, device: number, extra: Record<string, unknown> = {}) => ({
  licenceKey, fingerprint: fingerprint(device), nonce: nonce(), version: '0.1.0', persons: 3, usage: [], ...extra,
});

async function verified(c: Cloud, signed: unknown): Promise<LicenceDocument> {
  return verifyLicenceDocument(signed, (await c.a.store.serviceKeys.responseSigning()).publicKey);
}

t.test('the first check binds; the document is signed and answers this check', async (t) => {
  const c = await cloud(t);
  const licence = await c.licence({ grants: ['verify', 'identify'], maxPersons: 250 });
  const sent = body(licence.licenceKey, 1, { version: '0.1.0', persons: 7 });
  const res = await c.check(sent);
  t.equal(res.status, 200);
  t.equal(res.body.algorithm, 'rsa-sha256');
  const doc = await verified(c, res.body);
  t.same(doc.grants, ['identify', 'verify']);
  t.same(doc.limits, { maxPersons: 250 });
  t.equal(doc.nonce, sent.nonce);
  t.same(doc.device, { fingerprint: fingerprint(1) });
  t.equal(doc.licenceId, licence.licenceId);
  t.equal(doc.accountId, 'acme');
  t.equal(doc.licenceKeySha256, crypto.createHash('sha256').update(licence.licenceKey).digest('hex'));
  t.equal(doc.checkIntervalSeconds, 120, '[licensing] check_interval_seconds');
  t.equal(doc.issued, c.clock.now.toISOString());
  t.equal(doc.validUntil, new Date(c.clock.now.getTime() + 3600_000).toISOString(), 'issued + document_valid_seconds');
  t.equal(doc.licenceExpires, null);
  checkDocumentFor(doc, { nonce: sent.nonce, fingerprint: fingerprint(1), licenceKey: licence.licenceKey, now: c.clock.now });

  const { publicKey: stranger } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  t.throws(() => verifyLicenceDocument(res.body, stranger), /signature/, 'another key does not verify it');

  const line = await c.a.app.licences.get({ accountId: 'acme' }, licence.licenceId);
  t.same(line.device, { fingerprint: fingerprint(1), boundAt: c.clock.now.toISOString() });
  t.same(line.lastCheck, { at: c.clock.now.toISOString(), address: '127.0.0.1', version: '0.1.0', persons: 7 });

  c.clock.now = new Date(c.clock.now.getTime() + 60_000);
  const again = await c.check(body(licence.licenceKey, 1, { persons: 9 }));
  t.equal(again.status, 200, 'the bound device checks again');
  const line2 = await c.a.app.licences.get({ accountId: 'acme' }, licence.licenceId);
  t.equal(line2.device?.boundAt, line.device?.boundAt, 'bound once');
  t.equal(line2.lastCheck?.persons, 9);
});

t.test('another device is refused until the binding is released', async (t) => {
  const c = await cloud(t);
  const licence = await c.licence();
  t.equal((await c.check(body(licence.licenceKey, 1))).status, 200);
  const refused = await c.check(body(licence.licenceKey, 2, { usage: [{ day: '2030-05-06', operation: 'identify', requests: 5 }] }));
  t.equal(refused.status, 403);
  t.equal(refused.body.code, 'LC_008');
  t.match(refused.body.message, new RegExp(`^Licence bound to another device: licence ${licence.licenceId} is bound to another device;`));
  t.notOk(refused.body.message.includes(fingerprint(1).slice(0, 4)), 'nothing of the bound device\'s fingerprint');
  t.match(refused.body.message, new RegExp(`release the binding in the back-office or with face-check licence release ${licence.licenceId}$`));
  t.same(c.a.store.licenceUsage.range(licence.licenceId, '2030-01-01', '2030-12-31'), [], 'a refused check records no usage');

  await c.a.app.licences.release({ accountId: 'acme' }, licence.licenceId);
  const now2 = await c.check(body(licence.licenceKey, 2));
  t.equal(now2.status, 200);
  t.same((await verified(c, now2.body)).device, { fingerprint: fingerprint(2) });
  t.equal((await c.check(body(licence.licenceKey, 1))).body.code, 'LC_008', 'the old board is the other device now');
});

t.test('two devices checking in first at once: exactly one binds', async (t) => {
  const c = await cloud(t);
  for (let round = 0; round < 4; round++) {
    const licence = await c.licence();
    const results = await Promise.all([1, 2, 3].map((d) => c.check(body(licence.licenceKey, d))));
    t.same(results.map((r) => r.status).sort(), [200, 403, 403], `round ${round}`);
    const winner = [1, 2, 3][results.findIndex((r) => r.status === 200)];
    t.equal((await c.a.app.licences.get({ accountId: 'acme' }, licence.licenceId)).device?.fingerprint, fingerprint(winner));
  }
});

t.test('revoked, expired and unknown keys are refused, each saying why', async (t) => {
  const c = await cloud(t);
  const revoked = await c.licence();
  t.equal((await c.check(body(revoked.licenceKey, 1))).status, 200);
  await c.a.app.licences.revoke({ accountId: 'acme' }, revoked.licenceId);
  const r = await c.check(body(revoked.licenceKey, 1));
  t.same([r.status, r.body.code], [403, 'LC_006']);
  t.equal(r.body.message, `Licence revoked: licence ${revoked.licenceId} was revoked on 2030-05-06`);

  const expiry = new Date(c.clock.now.getTime() + 600_000).toISOString();
  const expiring = await c.licence({ expires: expiry });
  const early = await c.check(body(expiring.licenceKey, 1));
  t.equal(early.status, 200);
  t.equal((await verified(c, early.body)).validUntil, expiry, 'a document never outlives its licence');
  t.equal((await verified(c, early.body)).licenceExpires, expiry);
  c.clock.now = new Date(Date.parse(expiry));
  const late = await c.check(body(expiring.licenceKey, 1));
  t.same([late.status, late.body.code], [403, 'LC_007']);
  t.equal(late.body.message, `Licence expired: licence ${expiring.licenceId} expired on ${expiry}; its expiry can be extended in the back-office`);

  const unknown = await c.check(body(`fcl_${crypto.randomBytes(24).toString('base64url')}`, 1));
  t.same([unknown.status, unknown.body.code], [401, 'LC_005']);
  t.match(unknown.body.message, /^Unknown licence key: /);
});

t.test('bad bodies are R_003 (R_002 when not JSON)', async (t) => {
  const c = await cloud(t);
  const licence = await c.licence();
  const good = body(licence.licenceKey, 1);
  const { persons: _p, ...noPersons } = good;
  const bad: [string, unknown][] = [
    ['missing persons', noPersons],
    ['upper-case fingerprint', { ...good, fingerprint: fingerprint(1).toUpperCase() }],
    ['short fingerprint', { ...good, fingerprint: 'ab12' }],
    ['short nonce', { ...good, nonce: 'abc' }],
    ['nonce outside base64url', { ...good, nonce: 'a'.repeat(20) + '+/' }],
    ['malformed key', { ...good, licenceKey: 'fcl_short' }],
    ['version too long', { ...good, version: 'v'.repeat(65) }],
    ['negative persons', { ...good, persons: -1 }],
    ['persons as text', { ...good, persons: '3' }],
    ['unknown field', { ...good, extra: true }],
    ['unknown operation', { ...good, usage: [{ day: '2030-05-06', operation: 'fly', requests: 1 }] }],
    ['day not a date', { ...good, usage: [{ day: '2030-02-30', operation: 'identify', requests: 1 }] }],
    ['day malformed', { ...good, usage: [{ day: '6 May 2030', operation: 'identify', requests: 1 }] }],
    ['negative requests', { ...good, usage: [{ day: '2030-05-06', operation: 'identify', requests: -2 }] }],
    ['fractional requests', { ...good, usage: [{ day: '2030-05-06', operation: 'identify', requests: 1.5 }] }],
    ['row with an extra field', { ...good, usage: [{ day: '2030-05-06', operation: 'identify', requests: 1, at: 'x' }] }],
  ];
  for (const [what, payload] of bad) {
    const res = await c.check(payload);
    t.same([res.status, res.body.code], [400, 'R_003'], what);
    t.match(res.body.message, /^Fields validation exception: /, `${what}: explained`);
  }
  // More rows than a check may carry: the licence server refuses them itself, whatever reaches it. Distinct
  // days and operations of a licence in use for 60 days.
  c.clock.now = new Date(c.clock.now.getTime() + 60 * 86_400_000);
  const operations = ['live-face', 'create', 'update', 'remove', 'get', 'identify', 'verify', 'compare'];
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({
    day: new Date(Date.UTC(2030, 4, 6 + Math.floor(i / 8))).toISOString().slice(0, 10), operation: operations[i % 8], requests: 1,
  }));
  const server = new LicenceServer({ config: c.a.config, store: lmdbAsyncStore(c.a.store), errors: testErrorCatalog(), now: () => c.clock.now });
  await t.rejects(server.check({ ...good, usage: rows(401) }, '127.0.0.1'),
    { code: 'R_003', publicMessage: 'Fields validation exception: usage: a list of at most 400 rows' });
  const notJson = await c.a.call({ method: 'POST', url: CHECK, key: null, headers: { 'content-type': 'application/json' }, payload: '{"licenceKey":' });
  t.same([notJson.statusCode, notJson.json().code], [400, 'R_002']);
  t.equal((await c.a.app.licences.get({ accountId: 'acme' }, licence.licenceId)).device, null, 'no refused body bound the licence');
  t.equal((await c.check(good)).status, 200, 'the good body passes');
  // Over HTTP the whole allowance passes the body's shape scan, and one row more is the schema's R_003.
  const over = await c.check({ ...good, usage: rows(401) });
  t.same([over.status, over.body.code], [400, 'R_003'], '401 rows are refused by the schema');
  const full = await c.check({ ...good, usage: rows(400) });
  t.equal(full.status, 200, `400 usage rows are accepted over HTTP (${JSON.stringify(full.body).slice(0, 120)})`);
});

t.test('usage rows are summed per day and operation', async (t) => {
  const c = await cloud(t);
  const licence = await c.licence();
  const usage = (rows: [string, string, number][]) => rows.map(([day, operation, requests]) => ({ day, operation, requests }));
  t.equal((await c.check(body(licence.licenceKey, 1, {
    usage: usage([['2030-05-05', 'identify', 10], ['2030-05-06', 'identify', 5], ['2030-05-06', 'verify', 1]]),
  }))).status, 200);
  t.equal((await c.check(body(licence.licenceKey, 1, {
    usage: usage([['2030-05-06', 'identify', 4], ['2030-05-06', 'compare', 0], ['2030-05-06', 'live-face', 6]]),
  }))).status, 200);
  t.same(c.a.store.licenceUsage.range(licence.licenceId, '2030-05-01', '2030-05-31'), [
    { day: '2030-05-05', operation: 'identify', requests: 10 },
    { day: '2030-05-06', operation: 'identify', requests: 9 },
    { day: '2030-05-06', operation: 'live-face', requests: 6 },
    { day: '2030-05-06', operation: 'verify', requests: 1 },
  ]);
  t.same((await c.a.app.licences.get({ accountId: 'acme' }, licence.licenceId)).usageToday, { identify: 9, 'live-face': 6, verify: 1 });
  const other = await c.licence();
  t.same(c.a.store.licenceUsage.range(other.licenceId, '2030-05-01', '2030-05-31'), [], 'per licence');

  // A month offline with every operation in use: 240 rows in one check.
  c.clock.now = new Date(Date.UTC(2030, 5, 6, 12));
  const month = Array.from({ length: 30 }, (_, i) => new Date(Date.UTC(2030, 4, 7 + i)).toISOString().slice(0, 10));
  const operations = ['live-face', 'create', 'update', 'remove', 'get', 'identify', 'verify', 'compare'];
  const res = await c.check(body(other.licenceKey, 5, { usage: month.flatMap((day) => operations.map((operation) => ({ day, operation, requests: 2 }))) }));
  t.equal(res.status, 200, 'a month of rows is accepted');
  const offline = c.a.store.licenceUsage.range(other.licenceId, '2030-05-07', '2030-06-05');
  t.equal(offline.length, 240);
  t.equal(offline.reduce((n, r) => n + r.requests, 0), 480);
});
