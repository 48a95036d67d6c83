// The installed program (`face-check serve`, compiled dist/) as a device against a hostile fake licence
// server: it does not open its port unless its licence checks out, and exits with the documented code and a
// one-line reason - 69 when the cloud cannot be reached, 77 when the licence is refused (LC_005..LC_008) or
// its document is invalid (tampered, another key, replayed). A licensed process serves its grants only, and
// a grants change and a revocation reach it at its next check without a restart. A development ini serves
// and says UNLICENSED. Run `npx tsc -p tsconfig.json` first: the program runs from dist/.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { repoRoot } from '../helpers/errors';
import { FakeLicenceServer, testKeyPair } from '../helpers/fake-licence-server';
import { request, startServiceProcess } from '../helpers/service-process';
import { freePort } from '../helpers/free-port';

const compiled = path.join(repoRoot, 'dist', 'src', 'licensing', 'device', 'device-licence-setup.js');
const skip = fs.existsSync(compiled) ? false : 'dist/ lacks the licence code: run npx tsc -p tsconfig.json';

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(false); });
    socket.once('error', () => resolve(true));
  });
}

/** A device ini licensed against `server` (or a development one), in a fresh folder. */
function deviceIni(t: Test, server: FakeLicenceServer | undefined, port: number, publicKeyPem = testKeyPair(0).publicKey): string {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'machine-id'), `${crypto.randomBytes(16).toString('hex')}\n`);
  fs.writeFileSync(path.join(dir, 'cloud.pem'), publicKeyPem);
  const licence = server
    ? [`server_url = ${server.url}`, `key = ${server.licence.key}`, 'public_key_file = ./cloud.pem', 'machine_id_file = ./machine-id', 'check_timeout_ms = 1000']
    : ['development = true'];
  const file = path.join(dir, 'device.ini');
  fs.writeFileSync(file, [
    '[server]', 'mode = device', 'host = 127.0.0.1', `port = ${port}`,
    '[storage]', 'path = ./store',
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`,
    '[camera]', 'source = none',
    '[licence]', ...licence, '',
  ].join('\n'));
  return file;
}

/** Runs `face-check serve` expecting it to exit before it listens. */
async function serveUntilExit(ini: string): Promise<{ code: number | null; stderr: string; output: string }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'bin', 'face-check.js'), 'serve', '--config', ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let output = '';
  child.stdout.on('data', (c: Buffer) => { output += c.toString('utf8'); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); output += c.toString('utf8'); });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { code, stderr, output };
}

async function fakeServer(t: Test): Promise<FakeLicenceServer> {
  const server = await FakeLicenceServer.start();
  t.teardown(() => server.close());
  return server;
}

t.test('no licence server at start: exit 69, one line saying why, the port never opened', { skip }, async (t) => {
  const server = await fakeServer(t);
  const ini = deviceIni(t, server, await freePort());
  const port = Number(/port = (\d+)/.exec(fs.readFileSync(ini, 'utf8'))![1]);
  await server.close();
  const run = await serveUntilExit(ini);
  t.equal(run.code, 69, run.output);
  t.match(run.stderr, new RegExp(`^face-check: licence check failed: the licence server ${server.url} cannot be reached: ECONNREFUSED[^\\n]*\\n$`));
  t.notMatch(run.output, /Server listening|Api-Key/);
  t.ok(await refusesConnections(port), 'nothing listens on the configured port');
});

t.test('refusals at start: exit 77 with the licence server\'s reason', { skip }, async (t) => {
  const cases: Array<[string, (s: FakeLicenceServer) => void, RegExp]> = [
    ['revoked', (s) => { s.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: revoked by the operator' } }); },
      /^face-check: licence check failed: Licence revoked: revoked by the operator \(LC_006\)\n$/],
    ['expired', (s) => { s.licence.expires = '2020-01-01T00:00:00.000Z'; }, /Licence expired: .* \(LC_007\)\n$/],
    ['unknown key', (s) => { s.licence.key = `fcl_${'B'.repeat(32)}`; }, /Unknown licence key.* \(LC_005\)\n$/],
    ['bound elsewhere', (s) => { s.licence.boundTo = 'e'.repeat(64); }, /Licence bound to another device: release the binding .* \(LC_008\)\n$/],
  ];
  for (const [what, refuse, message] of cases) {
    const server = await fakeServer(t);
    const port = await freePort();
    const ini = deviceIni(t, server, port);
    refuse(server);
    const run = await serveUntilExit(ini);
    t.equal(run.code, 77, `${what}: ${run.output}`);
    t.match(run.stderr, message, what);
    t.ok(await refusesConnections(port), `${what}: nothing listens`);
  }
});

t.test('invalid documents at start: tampered, signed by another key, replayed: exit 77', { skip }, async (t) => {
  const server = await fakeServer(t);
  // One good start captures a document to replay later.
  const good = await startServiceProcess(deviceIni(t, server, 0), 'real');
  await good.stop();
  const captured = server.issued[0];
  const cases: Array<[string, FakeLicenceServer['respond'], string, RegExp]> = [
    ['tampered', (_b, normal) => {
      const answer = normal() as { status: number; json: { document: string } };
      const bytes = Buffer.from(answer.json.document, 'base64');
      bytes[bytes.indexOf('"issued":"') + 10] ^= 0x01; // the issued year's first digit: 2 -> 3
      return { status: 200, json: { ...answer.json, document: bytes.toString('base64') } };
    }, testKeyPair(0).publicKey, /signature does not verify against the pinned public key/],
    ['another key', (body) => ({ status: 200, json: server.sign(server.documentFor(body), testKeyPair(1)) }), testKeyPair(0).publicKey,
      /signature does not verify/],
    ['pinned key differs', undefined, testKeyPair(1).publicKey, /signature does not verify/],
    ['replayed', () => ({ status: 200, json: captured }), testKeyPair(0).publicKey, /nonce differs: an old document replayed/],
  ];
  for (const [what, respond, pinned, message] of cases) {
    server.respond = respond;
    server.licence.boundTo = undefined;
    const port = await freePort();
    const run = await serveUntilExit(deviceIni(t, server, port, pinned));
    t.equal(run.code, 77, `${what}: ${run.output}`);
    t.match(run.stderr, /^face-check: licence check failed: /, what);
    t.match(run.stderr, message, what);
    t.ok(await refusesConnections(port), `${what}: nothing listens`);
  }
});

t.test('a licensed process: its grants only, 401 first; grants change and revocation at the next check', { skip }, async (t) => {
  const server = await fakeServer(t);
  server.licence.grants = ['get'];
  server.licence.checkIntervalSeconds = 1;
  const device = await startServiceProcess(deviceIni(t, server, 0), 'real');
  t.teardown(() => device.kill9());
  t.match(device.output(), /licence lic_test0001 checked with .*: grants get/);
  t.same(await request(device.address, 'GET', '/person/face/nobody'), { status: 404, body: { code: 'NF_001', message: 'Face not found in collection' } });
  const identify = () => request(device.address, 'POST', '/person/recognize-face', { faceImage: 'AAAA' });
  t.same(await identify(), { status: 403, body: { code: 'FORBIDDEN', message: 'Forbidden: licence lic_test0001 does not grant "identify"' } });
  const noKey = await fetch(`${device.address}/person/recognize-face`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(noKey.status, 401);

  // Checks run one after another: once a second check has arrived, the device has applied the first's answer.
  const twoChecks = () => new Promise<void>((resolve) => {
    let seen = 0;
    const on = () => { if (++seen === 2) { server.off('check', on); resolve(); } };
    server.on('check', on);
  });
  let checked = twoChecks();
  server.licence.grants = ['get', 'identify'];
  await checked;
  t.same((await identify()).body.code, 'R_003', 'identify is granted now (the body is judged, not the licence)');

  checked = twoChecks();
  server.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: revoked by the operator' } });
  await checked;
  const revoked = await request(device.address, 'GET', '/person/face/nobody');
  t.equal(revoked.status, 403);
  t.match(revoked.body.message, /refused licence lic_test0001 .*Licence revoked: revoked by the operator \(LC_006\)/);
});

t.test('a development ini serves everything and says UNLICENSED', { skip }, async (t) => {
  const device = await startServiceProcess(deviceIni(t, undefined, 0), 'real');
  t.teardown(() => device.kill9());
  t.match(device.output(), /face-check: UNLICENSED development device: every operation is allowed; a production device needs \[licence\] server_url, key and public_key_file\n/);
  t.equal((await request(device.address, 'POST', '/person/recognize-face', { faceImage: 'AAAA' })).body.code, 'R_003', 'identify is not refused by a licence');
});
