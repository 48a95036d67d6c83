// Device API keys from the licence line to the board, with real processes on loopback and nothing mocked: a
// cloud (cloud mode) and a licensed device (device mode), each `face-check serve`'s start-up in its own process,
// the device's licence checks passing through a forwarding proxy that only counts them (so the test knows when
// the device has applied an answer, without sleeping) and can cut the line. A key made on the licence line
// (account API or CLI) calls the device and is served with its role's permissions, a signing key must sign;
// a key revoked on the cloud is refused, and a new one accepted, from the device's next check; the keys hold
// across a restart and an offline start on the stored document; a key made on the board works beside them.
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { main } from '../../src/cli/main';
import { tempDir } from '../helpers/app';
import { startServiceProcess, writeIni, type ServiceProcess } from '../helpers/service-process';
import { writeTinyTarball } from '../helpers/tiny-package';

/** Forwards /licence/v1/check to the cloud; emits 'check' as each arrives; `down` cuts every connection. */
class CheckProxy extends EventEmitter {
  down = false;
  private server!: http.Server;
  url = '';

  static async start(cloud: string): Promise<CheckProxy> {
    const proxy = new CheckProxy();
    proxy.server = http.createServer((req, res) => {
      if (proxy.down) { req.socket.destroy(); return; }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/licence/v1/check') proxy.emit('check');
        void fetch(`${cloud}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
          .then(async (answer) => {
            res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
            res.end(Buffer.from(await answer.arrayBuffer()));
          }, () => req.socket.destroy());
      });
    });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.url = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
    return proxy;
  }

  /** Resolves once two checks arrived after this call: the device has applied the first one's answer by then. */
  twoChecks(): Promise<void> {
    return new Promise((resolve) => {
      let seen = 0;
      const on = () => { if (++seen === 2) { this.off('check', on); resolve(); } };
      this.on('check', on);
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function call(base: string, method: string, url: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${url}`, {
    method, headers: { 'api-key': key, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function run(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await main(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
  return { code, out: lines.join('\n') };
}

t.test('device keys made on the licence line call the device; revoked ones are refused from the next check', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cloudDir = path.join(dir, 'cloud');
  fs.mkdirSync(cloudDir);
  const cloudIni = writeIni(cloudDir, ['[licensing]', 'check_interval_seconds = 1', 'public_url = http://127.0.0.1:9',
    `package_file = ${writeTinyTarball(cloudDir)}`].join('\n'));
  const cloud = await startServiceProcess(cloudIni, 'fake');
  t.teardown(() => cloud.stop());
  const proxy = await CheckProxy.start(cloud.address);
  t.teardown(() => proxy.close());

  // The operator's account, a licence line (the administrator's CLI), and its device keys.
  const email = 'operator@example.com';
  const password = 'correct horse battery staple';
  const registered = await call(cloud.address, 'POST', '/account/v1/register', '', { email, password });
  t.equal(registered.status, 200, 'the operator registers');
  const cloudKey: string = registered.body.apiKey.key;
  const session = await call(cloud.address, 'POST', '/account/v1/sessions', '', { email, password });
  const operator = { authorization: `Bearer ${session.body.token}` };
  const created = await run('licence', 'create', '--config', cloudIni, '--account', registered.body.account.accountId,
    '--grants', 'get,create,identify,verify,compare');
  t.equal(created.code, 0, 'licence create');
  const licenceId = /created licence (lic_[0-9a-f]{16})/.exec(created.out)![1];
  const licenceKey = /licence key: (fcl_\S+)/.exec(created.out)![1];
  const keysUrl = `/account/v1/licences/${licenceId}/keys`;
  const makeKey = async (body: object) => {
    const res = await call(cloud.address, 'POST', keysUrl, '', body, operator);
    t.equal(res.status, 200, res.status === 200 ? 'a device key is made' : JSON.stringify(res.body));
    return res.body as { keyId: string; key: string; signingKey?: string };
  };
  const matchKey = await makeKey({ role: 'match', label: 'turnstile' });
  const signingKey = await makeKey({ role: 'full', label: 'enterprise', signing: true });
  const enrolByCli = await run('licence', 'device-key', 'create', '--config', cloudIni, licenceId, '--role', 'enrol', '--label', 'enrolment desk');
  t.equal(enrolByCli.code, 0, 'licence device-key create');
  const enrolKey = /Api-Key: (fcd_\S+)/.exec(enrolByCli.out)![1];
  const enrolKeyId = /created device key ([0-9a-f]{12})/.exec(enrolByCli.out)![1];

  // The board: its ini names the licence, the cloud's pinned public key, and an offline grace; a key made on it.
  const boardDir = path.join(dir, 'board');
  fs.mkdirSync(boardDir);
  fs.writeFileSync(path.join(boardDir, 'cloud.pem'), (await (await fetch(`${cloud.address}/licence/v1/public-key`)).json()).publicKey);
  fs.writeFileSync(path.join(boardDir, 'machine-id'), `${crypto.randomBytes(16).toString('hex')}\n`);
  const deviceIni = path.join(boardDir, 'device.ini');
  fs.writeFileSync(deviceIni, [
    '[server]', 'mode = device', 'host = 127.0.0.1', 'port = 0',
    '[storage]', 'path = ./store',
    '[camera]', 'source = none',
    '[licence]', `server_url = ${proxy.url}`, `key = ${licenceKey}`, 'public_key_file = ./cloud.pem', 'machine_id_file = ./machine-id',
    'check_timeout_ms = 2000', 'offline_grace_hours = 1', '',
  ].join('\n'));
  const local = await run('keys', 'create', '--config', deviceIni, '--role', 'full', '--label', 'on the board');
  t.equal(local.code, 0, 'keys create on the board');
  const localKey = /Api-Key: (fc_\S+)/.exec(local.out)![1];

  let device: ServiceProcess = await startServiceProcess(deviceIni, 'fake');
  t.teardown(() => device.kill9());
  t.match(device.output(), new RegExp(`licence ${licenceId}: 3 device API keys from the licence line`), 'the device says which keys it took');

  const get = (key: string) => call(device.address, 'GET', '/person/face/nobody', key);
  const identify = (key: string) => call(device.address, 'POST', '/person/recognize-face', key, { faceImage: 'AAAA' });
  const served = async (key: string, what: string) => {
    const res = await get(key);
    t.same([res.status, res.body.code], [404, 'NF_001'], what);
  };

  await served(matchKey.key, 'a licence line key is served');
  await served(localKey, 'a key made on the board is served');
  await served(enrolKey, 'a key made with the CLI is served');
  t.equal((await identify(matchKey.key)).body.code, 'R_003', 'match may identify (the body is judged)');
  const enrolIdentify = await identify(enrolKey);
  t.same([enrolIdentify.status, enrolIdentify.body.code], [403, 'FORBIDDEN'], 'enrol may not identify: roles hold on device keys');
  const notHere = await get(cloudKey);
  t.equal(notHere.status, 401, 'the account\'s cloud key is not a device key');
  t.match(notHere.body.message, /device keys \(fcd_\.\.\.\) of its licence line/, 'the 401 says which keys the device takes');

  // A signing key: unsigned is refused; signed is served, and the answer is signed by the device.
  t.equal((await get(signingKey.key)).status, 401, 'a signing key must sign');
  const timestamp = String(Math.floor(Date.now() / 1000));
  const uri = '/person/face/nobody';
  const signature = crypto.sign('sha256', Buffer.from(`${device.address}${uri}${timestamp}`), signingKey.signingKey!).toString('base64');
  const signed = await call(device.address, 'GET', uri, signingKey.key, undefined, { signature, timestamp });
  t.same([signed.status, signed.body.code], [404, 'NF_001'], 'a signed request with the signing key is served');
  t.ok(signed.headers.get('signature'), 'and its answer is signed');

  // Revoked on the cloud, created on the cloud: both take effect at the device's next check, not before.
  t.equal((await call(cloud.address, 'DELETE', `${keysUrl}/${enrolKeyId}`, '', undefined, operator)).status, 200, 'revoked on the cloud');
  const lateKey = await makeKey({ role: 'match', label: 'added later' });
  await proxy.twoChecks();
  t.equal((await get(enrolKey)).status, 401, 'the revoked key is refused at the device');
  await served(lateKey.key, 'the key made after the start is accepted');
  await served(matchKey.key, 'the other keys still work');
  await served(localKey, 'and so does the board\'s own');

  // A restart: the keys come with the start's check.
  await device.stop();
  device = await startServiceProcess(deviceIni, 'fake');
  await served(matchKey.key, 'after a restart');
  await served(lateKey.key, 'after a restart, the later key');
  t.equal((await get(enrolKey)).status, 401, 'after a restart, the revoked key is still refused');

  // An offline start: the cloud out of reach, the stored document rules, with its keys.
  await device.stop();
  proxy.down = true;
  device = await startServiceProcess(deviceIni, 'fake');
  t.match(device.output(), /OFFLINE START on the stored licence document/);
  await served(matchKey.key, 'offline: a licence line key');
  await served(localKey, 'offline: the board\'s own key');
  t.equal((await get(enrolKey)).status, 401, 'offline: the revoked key is refused');
});
