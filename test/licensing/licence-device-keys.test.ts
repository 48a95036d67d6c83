// Device API keys on a licence line, through the account API on both storage backends: an operator creates,
// lists and revokes the keys its licensed device accepts (roles as cloud keys, signing keys); a key is answered
// once and kept only as its SHA-256, which is all the signed licence document tells the device; a revoked key
// leaves the next document and stays listed; another account's licence is "not found"; a revoked licence takes
// no key; a licence line holds at most MAX_ACTIVE_DEVICE_KEYS active keys. And what a device believes of the
// document's deviceKeys field.
import crypto from 'node:crypto';
import path from 'node:path';
import t from 'tap';
import { MAX_ACTIVE_DEVICE_KEYS } from '../../src/licensing/cloud/licence-device-keys';
import {
  DOCUMENT_FORMAT, LicenceDocumentError, MAX_DOCUMENT_DEVICE_KEYS, signLicenceDocument, verifyLicenceDocument, type LicenceDocument,
} from '../../src/licensing/licence-document';
import { BACKENDS, backendSkipReason, startBackendApp, type BackendApp } from '../helpers/backends';
import { testKeyPair } from '../helpers/fake-licence-server';
import { writeTinyTarball } from '../helpers/tiny-package';

const PASSWORD = 'correct horse battery staple';

async function signedIn(a: BackendApp, email: string): Promise<{ accountId: string; headers: Record<string, string> }> {
  const { account } = await a.app.accounts.register(email, PASSWORD, '192.0.2.1');
  const session = await a.app.accounts.signIn(email, PASSWORD, '192.0.2.1');
  return { accountId: account.accountId, headers: { authorization: `Bearer ${session.token}` } };
}

for (const backend of BACKENDS) {
  t.test(`device keys on a licence line (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const a = await startBackendApp(backend, {
      tune: (c) => {
        c.server.mode = 'cloud';
        c.licensing.public_url = 'https://cloud.example.com';
        c.licensing.package_file = writeTinyTarball(path.dirname(c.storage.path));
      },
    });
    t.teardown(() => a.close());
    const owner = await signedIn(a, 'owner@example.com');
    const other = await signedIn(a, 'other@example.com');
    const licence = await a.app.licences.create(owner.accountId, { label: 'kiosk', grants: ['get', 'identify'] }, { byAdministrator: true });
    const keysUrl = `/account/v1/licences/${licence.licenceId}/keys`;
    const api = async (who: { headers: Record<string, string> }, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
      const res = await a.call({ method, url, key: null, headers: who.headers, ...(payload ? { payload } : {}) });
      return { status: res.statusCode, body: res.json(), headers: res.headers };
    };
    const documentNow = async (): Promise<{ doc: LicenceDocument; text: string }> => {
      const res = await a.call({
        method: 'POST', url: '/licence/v1/check', key: null,
        payload: {
          licenceKey: licence.licenceKey, fingerprint: crypto.createHash('sha256').update('board').digest('hex'),
          nonce: crypto.randomBytes(18).toString('base64url'), version: '0.1.0', persons: 0, usage: [],
        },
      });
      t.equal(res.statusCode, 200, 'the check is answered');
      const signed = res.json();
      const doc = verifyLicenceDocument(signed, (await a.store.serviceKeys.responseSigning()).publicKey);
      return { doc, text: Buffer.from(signed.document, 'base64').toString('utf8') };
    };
    const sha256 = (key: string) => crypto.createHash('sha256').update(key, 'utf8').digest('hex');

    t.same((await api(owner, 'GET', keysUrl)).body, { keys: [] }, 'a new licence line has no device keys');
    t.same((await documentNow()).doc.deviceKeys, [], 'and its document carries none');

    // Created: the key once, in the fcd_ format, never cached.
    const made = await api(owner, 'POST', keysUrl, { role: 'match', label: 'turnstile app' });
    t.equal(made.status, 200, JSON.stringify(made.body));
    t.match(made.body, { licenceId: licence.licenceId, role: 'match', label: 'turnstile app', revoked: null, signing: false });
    t.match(made.body.key, /^fcd_[A-Za-z0-9_-]{32}$/);
    t.match(made.body.keyId, /^[0-9a-f]{12}$/);
    t.equal(made.headers['cache-control'], 'no-store');
    const signing = await api(owner, 'POST', keysUrl, { role: 'full', signing: true });
    t.equal(signing.status, 200);
    t.match(signing.body.signingKey, /^-----BEGIN PRIVATE KEY-----/);
    t.equal(signing.body.signing, true);

    // Listed without the key or its hash.
    const listed = await api(owner, 'GET', keysUrl);
    t.same(listed.body.keys.map((k: { keyId: string }) => k.keyId), [made.body.keyId, signing.body.keyId]);
    for (const k of listed.body.keys) t.same(Object.keys(k).sort(), ['created', 'keyId', 'label', 'licenceId', 'revoked', 'role', 'signing']);

    // The document tells the device the hashes, roles and the signing public key; the keys appear nowhere.
    const { doc, text } = await documentNow();
    t.same(doc.deviceKeys?.map((k) => [k.keyId, k.keySha256, k.role, Boolean(k.signingPublicKey)]), [
      [made.body.keyId, sha256(made.body.key), 'match', false],
      [signing.body.keyId, sha256(signing.body.key), 'full', true],
    ]);
    const publicHalf = crypto.createPublicKey(signing.body.signingKey).export({ type: 'spki', format: 'pem' }).toString();
    t.equal(doc.deviceKeys?.[1].signingPublicKey, publicHalf, 'the signing key\'s public half');
    const record = JSON.stringify(await a.store.licences.get(licence.licenceId));
    for (const key of [made.body.key, signing.body.key]) {
      t.notOk(text.includes(key), 'the key is not in the document');
      t.notOk(record.includes(key), 'the key is not in the stored licence');
      t.ok(record.includes(sha256(key)), 'its hash is');
    }
    t.notOk(record.includes('PRIVATE KEY'), 'a generated signing key is not kept');

    // Another account's licence is not found, exactly like a missing one.
    for (const [method, url, payload] of [['GET', keysUrl], ['POST', keysUrl, { role: 'full' }], ['DELETE', `${keysUrl}/${made.body.keyId}`]] as const) {
      const res = await api(other, method, url, payload);
      t.same([res.status, res.body.code], [404, 'LC_004'], `${method} by another account`);
    }
    t.same((await api(owner, 'GET', '/account/v1/licences/lic_0000000000000000/keys')).body.code, 'LC_004');
    t.same((await api(owner, 'POST', keysUrl, { role: 'admin' })).body.code, 'R_003', 'an unknown role');
    t.same((await api(owner, 'POST', keysUrl, { role: 'match', signing: true, publicKey: publicHalf })).body.code, 'R_003', 'signing and a public key');
    t.same((await api(owner, 'POST', keysUrl, { role: 'match', publicKey: 'not a key' })).body.code, 'R_003', 'a public key that is none');
    const own = await api(owner, 'POST', keysUrl, { role: 'enrol', publicKey: publicHalf });
    t.same([own.status, own.body.signing, own.body.signingKey], [200, true, undefined], 'the client\'s own public key');

    // Revoked: out of the next document, still listed; revoking again changes nothing; an unknown key is 404.
    const revoked = await api(owner, 'DELETE', `${keysUrl}/${made.body.keyId}`);
    t.equal(revoked.status, 200);
    t.match(revoked.body, { keyId: made.body.keyId, role: 'match' });
    t.ok(revoked.body.revoked, 'the revocation time');
    t.same((await api(owner, 'DELETE', `${keysUrl}/${made.body.keyId}`)).body.revoked, revoked.body.revoked, 'revoking again changes nothing');
    t.same((await api(owner, 'DELETE', `${keysUrl}/000000000000`)).status, 404);
    t.same((await documentNow()).doc.deviceKeys?.map((k) => k.keyId), [signing.body.keyId, own.body.keyId], 'the revoked key left the document');
    t.same((await api(owner, 'GET', keysUrl)).body.keys.map((k: { revoked: string | null }) => k.revoked !== null), [true, false, false]);

    // At most MAX_ACTIVE_DEVICE_KEYS active keys; revoking one makes room.
    for (let i = 2; i < MAX_ACTIVE_DEVICE_KEYS; i++) t.equal((await api(owner, 'POST', keysUrl, { role: 'match' })).status, 200);
    const over = await api(owner, 'POST', keysUrl, { role: 'match' });
    t.same([over.status, over.body.code], [400, 'R_003']);
    t.match(over.body.message, new RegExp(`holds ${MAX_ACTIVE_DEVICE_KEYS} active device keys.*revoke one first`));
    t.equal((await api(owner, 'DELETE', `${keysUrl}/${own.body.keyId}`)).status, 200);
    t.equal((await api(owner, 'POST', keysUrl, { role: 'match' })).status, 200, 'room again after a revocation');
    t.equal((await documentNow()).doc.deviceKeys?.length, MAX_ACTIVE_DEVICE_KEYS);

    // A revoked licence takes no new key; its keys stay listed.
    t.equal((await api(owner, 'POST', `/account/v1/licences/${licence.licenceId}/revoke`)).status, 200);
    const late = await api(owner, 'POST', keysUrl, { role: 'match' });
    t.same([late.status, late.body.code], [403, 'LC_006']);
    t.equal((await api(owner, 'GET', keysUrl)).body.keys.length, MAX_ACTIVE_DEVICE_KEYS + 2);
  });
}

t.test('a device believes a document\'s deviceKeys only in their shape; a document without them has none', async (t) => {
  const pair = testKeyPair(0);
  const base: LicenceDocument = {
    format: DOCUMENT_FORMAT, licenceId: 'lic_0123456789abcdef', accountId: 'acme', label: '', status: 'active', grants: ['get'],
    limits: { maxPersons: null }, licenceExpires: null, device: { fingerprint: 'ab'.repeat(32) }, licenceKeySha256: 'cd'.repeat(32),
    nonce: 'n'.repeat(24), issued: new Date().toISOString(), checkIntervalSeconds: 60, validUntil: new Date(Date.now() + 60_000).toISOString(),
  };
  const read = (doc: object) => verifyLicenceDocument(signLicenceDocument(doc as LicenceDocument, pair.privateKey), pair.publicKey);
  const key = { keyId: '0123456789ab', keySha256: 'ef'.repeat(32), role: 'match' };
  t.equal(read(base).deviceKeys, undefined, 'an older cloud\'s document: no device keys');
  t.same(read({ ...base, deviceKeys: [key, { ...key, role: 'full', signingPublicKey: 'PEM' }] }).deviceKeys?.length, 2);
  const bad: Array<[string, unknown]> = [
    ['not a list', { key }],
    ['a key in clear instead of its hash', [{ ...key, keySha256: 'fcd_'.padEnd(36, 'x') }]],
    ['an upper-case hash', [{ ...key, keySha256: 'EF'.repeat(32) }]],
    ['an unknown role', [{ ...key, role: 'admin' }]],
    ['no key id', [{ keySha256: key.keySha256, role: 'match' }]],
    ['a public key that is not text', [{ ...key, signingPublicKey: 42 }]],
    ['too many', Array.from({ length: MAX_DOCUMENT_DEVICE_KEYS + 1 }, () => key)],
  ];
  for (const [what, deviceKeys] of bad) {
    t.throws(() => read({ ...base, deviceKeys }), new LicenceDocumentError('the signed licence document has no valid deviceKeys'), what);
  }
});
