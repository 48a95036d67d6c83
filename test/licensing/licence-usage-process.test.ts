// Licence usage across real processes, on both cloud backends: a cloud and a licensed device, each its own
// process (the real start-up with the fake engine), the device checking in through a relay that can lose the
// cloud's answer. Requests answered before a SIGTERM reach the cloud at the stop; before a kill -9, with the
// first check after the restart; a report the cloud added but whose answer never reached the device (killed
// on the way back) is sent again and acknowledged without being added twice; and requests after the restart
// follow. The cloud's usage of the licence is each request exactly once.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { main } from '../../src/cli/main';
import { tempDir } from '../helpers/app';
import { BACKENDS, backendSkipReason, type Backend } from '../helpers/backends';
import { startPostgres } from '../helpers/postgres';
import { request, startServiceProcess, writeIni, type ServiceProcess } from '../helpers/service-process';
import { writeTinyTarball } from '../helpers/tiny-package';

interface CheckBody { usage: Array<{ requests: number }>; usageReport?: { series: string; number: number } }

/**
 * Passes the device's checks to the cloud. With `onAnswer` set, the cloud's answer is not passed on: the
 * hook runs (it kills the device) and the connection is cut, as if the answer were lost on the way back.
 */
class CheckRelay {
  readonly checks: CheckBody[] = [];
  onAnswer?: () => Promise<void>;
  private constructor(private readonly server: http.Server, readonly url: string) {}

  static async start(cloud: string): Promise<CheckRelay> {
    let self!: CheckRelay;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        self.checks.push(JSON.parse(body.toString('utf8')) as CheckBody);
        void fetch(`${cloud}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body })
          .then(async (answer) => {
            const text = await answer.text();
            const lose = self.onAnswer;
            if (lose) {
              self.onAnswer = undefined;
              await lose();
              res.destroy();
              return;
            }
            res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
          }, () => res.destroy());
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new CheckRelay(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function json(base: string, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${url}`, {
    method, headers: { 'content-type': 'application/json', ...opts.headers }, body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The cloud's ini for `backend`, in `dir` (PostgreSQL: a database of its own on a server this test starts). */
async function cloudIni(t: Test, backend: Backend, dir: string): Promise<string> {
  const licensing = ['[licensing]', `package_file = ${writeTinyTarball(dir)}`];
  if (backend === 'lmdb') return writeIni(dir, licensing.join('\n'));
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  const keyFile = path.join(dir, 'node.key');
  fs.writeFileSync(keyFile, crypto.randomBytes(32), { mode: 0o600 });
  const url = await pg.createDatabase('usage');
  const ini = writeIni(dir, [...licensing, ''].join('\n'));
  fs.writeFileSync(ini, fs.readFileSync(ini, 'utf8').replace('[storage]\n', `[storage]\nbackend = postgres\npostgres_url = ${url}\nkey_file = ${keyFile}\n`));
  return ini;
}

for (const backend of BACKENDS) {
  t.test(`${backend} cloud: usage answered before a SIGTERM, a kill -9 and after a restart arrives exactly once`,
    { skip: backendSkipReason(backend) }, async (t) => {
    const dir = tempDir();
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const cloudDir = path.join(dir, 'cloud');
    fs.mkdirSync(cloudDir);
    const ini = await cloudIni(t, backend, cloudDir);
    const cloud = await startServiceProcess(ini, 'fake');
    t.teardown(() => cloud.stop());

    // An operator with a licence granting "get" (the activation code from the administrator's CLI).
    const email = 'operator@example.com';
    const password = 'correct horse battery staple';
    t.equal((await json(cloud.address, 'POST', '/account/v1/register', { body: { email, password } })).status, 200);
    const session = await json(cloud.address, 'POST', '/account/v1/sessions', { body: { email, password } });
    const operator = { authorization: `Bearer ${session.body.token}` };
    const lines: string[] = [];
    t.equal(await main(['licence', 'activation-code', '--config', ini, '--plan', 'free'], { out: (l) => lines.push(l), err: (l) => lines.push(l) }), 0, lines.join('\n'));
    const code = /\b[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}\b/.exec(lines.join('\n'))![0];
    const added = await json(cloud.address, 'POST', '/account/v1/licences', { headers: operator, body: { label: 'kiosk', grants: ['get'], activationCode: code } });
    t.equal(added.status, 200, JSON.stringify(added.body));
    const { licenceId, licenceKey } = added.body as { licenceId: string; licenceKey: string };
    const usageOnCloud = async (): Promise<number> => {
      const usage = await json(cloud.address, 'GET', `/account/v1/licences/${licenceId}/usage?days=2`, { headers: operator });
      return (usage.body.days as Array<{ requests: { get?: number } }>).reduce((n, d) => n + (d.requests.get ?? 0), 0);
    };

    // The device, checking in through the relay.
    const relay = await CheckRelay.start(cloud.address);
    t.teardown(() => relay.close());
    const deviceDir = path.join(dir, 'device');
    fs.mkdirSync(deviceDir);
    fs.writeFileSync(path.join(deviceDir, 'cloud.pem'), (await json(cloud.address, 'GET', '/licence/v1/public-key')).body.publicKey);
    fs.writeFileSync(path.join(deviceDir, 'machine-id'), `${crypto.randomBytes(16).toString('hex')}\n`);
    const deviceIni = writeIni(deviceDir, ['[licence]', `server_url = ${relay.url}`, `key = ${licenceKey}`,
      'public_key_file = ./cloud.pem', 'machine_id_file = ./machine-id', 'check_timeout_ms = 5000'].join('\n'));
    fs.writeFileSync(deviceIni, fs.readFileSync(deviceIni, 'utf8').replace('mode = cloud', 'mode = device'));
    let device: ServiceProcess | undefined;
    t.teardown(() => device?.kill9());
    const answered = async (n: number) => {
      for (let i = 0; i < n; i++) t.equal((await request(device!.address, 'GET', '/person/face/nobody')).status, 404);
    };

    device = await startServiceProcess(deviceIni, 'fake');
    await answered(3);
    t.equal(await device.stop(), 0, 'an orderly stop');
    t.equal(await usageOnCloud(), 3, 'the 3 requests before the SIGTERM reached the cloud at the stop');

    device = await startServiceProcess(deviceIni, 'fake');
    await answered(4);
    await device.kill9();
    t.equal(await usageOnCloud(), 3, 'the 4 requests before the kill -9 have not been sent yet');
    device = await startServiceProcess(deviceIni, 'fake');
    t.equal(await usageOnCloud(), 7, '... and arrive with the first check after the restart');

    // The stop's report reaches the cloud, which adds it; the device is killed before the answer reaches it.
    await answered(5);
    const killed = device;
    relay.onAnswer = () => killed.kill9();
    await killed.stop();
    t.equal(await usageOnCloud(), 12, 'the cloud added the report whose answer was lost');
    const lost = relay.checks.at(-1)!;
    t.equal(lost.usage.reduce((n, r) => n + r.requests, 0), 5);

    device = await startServiceProcess(deviceIni, 'fake');
    const resent = relay.checks.at(-1)!;
    t.same(resent.usageReport, lost.usageReport, 'the restarted device sent the same report again');
    t.equal(await usageOnCloud(), 12, '... and the cloud acknowledged it without adding it twice');

    await answered(2);
    t.equal(await device.stop(), 0);
    t.equal(await usageOnCloud(), 14, 'requests after the restart follow: each of the 14 counted once');
    device = undefined;
  });
}
