// One licence check against a hostile fake licence server: what the device sends (the wire contract) and how
// each answer is classified - ok, unreachable (retry), refused (LC_xxx), invalid (not a licence for this check).
// Also the device fingerprint's known answers.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ConfigError } from '../../src/config/load';
import { deviceFingerprint, readDeviceFingerprint } from '../../src/licensing/device/device-fingerprint';
import { LicenceClient, type CheckOutcome } from '../../src/licensing/device/licence-client';
import { tempDir } from '../helpers/app';
import { FakeLicenceServer, testKeyPair } from '../helpers/fake-licence-server';

const FINGERPRINT = deviceFingerprint('machine-1234');

function clientOf(server: FakeLicenceServer,
  opts: { url?: string; timeoutMs?: number; fingerprint?: string; licenceKey?: string } = {}): LicenceClient {
  return new LicenceClient({
    serverUrl: opts.url ?? server.url, licenceKey: opts.licenceKey ?? server.licence.key,
    publicKey: crypto.createPublicKey(testKeyPair(0).publicKey), fingerprint: opts.fingerprint ?? FINGERPRINT,
    version: '0.1.0-test', timeoutMs: opts.timeoutMs ?? 2000,
  });
}

const report = { persons: 3, usage: [{ day: '2025-01-02', operation: 'identify' as const, requests: 7 }] };

function kindOf(outcome: CheckOutcome): string {
  return outcome.kind === 'refused' ? `refused ${outcome.code}` : outcome.kind;
}

t.test('device fingerprint: HMAC-SHA256 keyed by the trimmed machine id over the label and camera serial', async (t) => {
  // Known answers computed with: printf 'face-check device fingerprint\0<serial>' | openssl dgst -sha256 -hmac machine-1234
  t.equal(deviceFingerprint('machine-1234'), 'a4285637bacef58a935106389a0710cb5aee50f922a48f9ae6b4efc965112c47');
  t.equal(deviceFingerprint('  machine-1234\n'), deviceFingerprint('machine-1234'), 'the machine id is trimmed');
  t.equal(deviceFingerprint('machine-1234', 'KINECT-XYZ'), '7585a8178fc4ca5bfd67edb6fe8cadb78280df600f8f56cb13942fbabf5678fc');
  t.not(deviceFingerprint('machine-1235'), deviceFingerprint('machine-1234'));
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'id'), 'machine-1234\n');
  t.equal(readDeviceFingerprint(path.join(dir, 'id')), deviceFingerprint('machine-1234'));
  fs.writeFileSync(path.join(dir, 'empty'), ' \n');
  t.throws(() => readDeviceFingerprint(path.join(dir, 'empty')), ConfigError);
  t.throws(() => readDeviceFingerprint(path.join(dir, 'missing')), /\[licence\] machine_id_file: cannot read/);
});

t.test('a good check: the body follows the contract, the verified document answers it', async (t) => {
  const server = await FakeLicenceServer.start();
  t.teardown(() => server.close());
  server.licence.grants = ['get', 'identify'];
  const outcome = await clientOf(server).check(report);
  t.equal(outcome.kind, 'ok');
  if (outcome.kind !== 'ok') return;
  t.same(outcome.document.grants, ['get', 'identify']);
  const sent = server.checks[0];
  t.equal(sent.licenceKey, server.licence.key);
  t.equal(sent.fingerprint, FINGERPRINT);
  t.match(sent.nonce, /^[A-Za-z0-9_-]{16,64}$/);
  t.same([sent.version, sent.persons, sent.usage], ['0.1.0-test', 3, report.usage]);
  t.equal(outcome.document.nonce, sent.nonce, 'the document answers this nonce');
  await clientOf(server).check(report);
  t.not(server.checks[1].nonce, sent.nonce, 'every check has a fresh nonce');
});

t.test('unreachable: refused connection, timeout, 5xx, 429, an answer that is not JSON', async (t) => {
  const server = await FakeLicenceServer.start();
  t.teardown(() => server.close());
  const gone = await FakeLicenceServer.start();
  const goneUrl = gone.url;
  await gone.close();
  const down = await clientOf(server, { url: goneUrl }).check(report);
  t.match(down, { kind: 'unreachable', reason: /ECONNREFUSED/ });

  server.respond = () => 'hang';
  const started = Date.now();
  const slow = await clientOf(server, { timeoutMs: 300 }).check(report);
  t.match(slow, { kind: 'unreachable', reason: /no answer within 300 ms/ });
  t.ok(Date.now() - started < 2000, 'the timeout bounds the check');

  for (const [answer, reason] of [
    [{ status: 500, json: { code: 'INTERNAL', message: 'Internal Server Error' } }, /answered 500/],
    [{ status: 503, text: 'maintenance' }, /answered 503/],
    [{ status: 429, json: { code: 'BUSY', message: 'slow down' } }, /answered 429/],
    [{ status: 200, text: '<html>captive portal</html>' }, /not JSON/],
  ] as const) {
    server.respond = () => answer;
    t.match(await clientOf(server).check(report), { kind: 'unreachable', reason }, JSON.stringify(answer));
  }
});

t.test('refused: the LC_xxx error bodies carry their code and message', async (t) => {
  const server = await FakeLicenceServer.start();
  t.teardown(() => server.close());
  server.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: revoked by the operator' } });
  t.same(await clientOf(server).check(report), { kind: 'refused', status: 403, code: 'LC_006', message: 'Licence revoked: revoked by the operator' });
  server.respond = undefined;
  t.equal(kindOf(await clientOf(server, { licenceKey: `fcl_${'A'.repeat(32)}` }).check(report)), 'refused LC_005', 'unknown key');
  t.equal(kindOf(await clientOf(server).check(report)), 'ok', 'binds to this fingerprint');
  t.equal(kindOf(await clientOf(server, { fingerprint: deviceFingerprint('another board') }).check(report)), 'refused LC_008');
  server.licence.expires = new Date(Date.now() - 1000).toISOString();
  t.equal(kindOf(await clientOf(server).check(report)), 'refused LC_007');
});

t.test('invalid: tampered, another key, replayed, another device or key, run out, a non-licence error', async (t) => {
  const server = await FakeLicenceServer.start();
  t.teardown(() => server.close());
  const client = clientOf(server);
  t.equal((await client.check(report)).kind, 'ok');
  const captured = server.issued[0];

  server.respond = (_body, normal) => {
    const answer = normal() as { status: number; json: { document: string } };
    const bytes = Buffer.from(answer.json.document, 'base64');
    const at = bytes.indexOf('"label":"') + 9;
    bytes[at] ^= 0x01; // "test board" -> "uest board": still JSON, one byte off
    return { status: 200, json: { ...answer.json, document: bytes.toString('base64') } };
  };
  t.match(await client.check(report), { kind: 'invalid', reason: /signature does not verify/ }, 'one byte changed');

  server.respond = (body) => ({ status: 200, json: server.sign(server.documentFor(body), testKeyPair(1)) });
  t.match(await client.check(report), { kind: 'invalid', reason: /signature does not verify/ }, 'signed by another key');

  server.respond = () => ({ status: 200, json: captured });
  t.match(await client.check(report), { kind: 'invalid', reason: /nonce differs/ }, 'a replayed old document');

  server.respond = (body) => ({ status: 200, json: server.sign(server.documentFor(body, { device: { fingerprint: 'f'.repeat(64) } })) });
  t.match(await client.check(report), { kind: 'invalid', reason: /bound to another device/ });

  server.respond = (body) => ({ status: 200, json: server.sign(server.documentFor(body, { licenceKeySha256: '0'.repeat(64) })) });
  t.match(await client.check(report), { kind: 'invalid', reason: /another licence key/ });

  server.respond = (body) => ({ status: 200, json: server.sign(server.documentFor(body, { validUntil: new Date(Date.now() - 1).toISOString() })) });
  t.match(await client.check(report), { kind: 'invalid', reason: /ran out/ });

  server.respond = () => ({ status: 200, json: { document: 'e30=', algorithm: 'rsa-sha256' } });
  t.match(await client.check(report), { kind: 'invalid', reason: /not a signed licence document/ });

  server.respond = () => ({ status: 404, json: { code: 'NOT_FOUND', message: 'Not found' } });
  t.match(await client.check(report), { kind: 'invalid', reason: /answered 404 NOT_FOUND: Not found, not a licence/ });
});
