// The licence set-up of spec section 1, end to end with real processes on loopback and nothing mocked:
// a cloud (`face-check serve`, cloud mode) where an operator registers and adds a licence with an
// activation code and grants; the licence's generated installation command run for real into a temporary
// root (the package the cloud serves, checked by its sha256, installed with npm); the installed device
// started from that root: it checks in, serves a granted operation, refuses an ungranted one, and the cloud
// shows its usage; a revocation reaches the running device at its next check. Needs curl and sha256sum, as the
// installation command does.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { main } from '../../src/cli/main';
import { installSkipReason, packageWithThisAddon } from '../helpers/served-package';
import { startServiceProcess, writeIni, type ServiceProcess } from '../helpers/service-process';
import { spawnListening } from '../helpers/spawn-listening';

const execFileAsync = promisify(execFile);

async function json(base: string, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

t.test('register, add a licence with an activation code, install on a device, serve by the grants, revoke',
  { skip: installSkipReason() },
  async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-e2e-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cloudDir = path.join(dir, 'cloud');
  fs.mkdirSync(cloudDir);
  const packageFile = await packageWithThisAddon(dir);
  const cloudIni = writeIni(cloudDir, ['[licensing]', 'check_interval_seconds = 1', 'document_valid_seconds = 60',
    ...(packageFile ? [`package_file = ${packageFile}`] : [])].join('\n'));
  const cloud: ServiceProcess = await startServiceProcess(cloudIni, 'real', 120_000);
  t.teardown(() => cloud.stop());

  // 1. The operator registers (the free test plan: licences need an activation code) and signs in.
  const email = 'operator@example.com';
  const password = 'correct horse battery staple';
  const registered = await json(cloud.address, 'POST', '/account/v1/register', { body: { email, password } });
  t.equal(registered.status, 200, JSON.stringify(registered.body));
  const session = await json(cloud.address, 'POST', '/account/v1/sessions', { body: { email, password } });
  t.equal(session.status, 200);
  const operator = { authorization: `Bearer ${session.body.token}` };

  // 2. The administrator issues an activation code for the free plan (CLI, against the running cloud's store).
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  t.equal(await main(['licence', 'activation-code', '--config', cloudIni, '--plan', 'free'], io), 0, lines.join('\n'));
  const code = /\b[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}\b/.exec(lines.join('\n'))?.[0];
  t.ok(code, 'an activation code is printed');

  const withoutCode = await json(cloud.address, 'POST', '/account/v1/licences',
    { headers: operator, body: { label: 'gate 1', grants: ['get', 'identify'] } });
  t.equal(withoutCode.body?.code, 'LC_001', 'the free plan needs an activation code');

  // 2-3. The licence is added with the code, then its grants are set.
  const added = await json(cloud.address, 'POST', '/account/v1/licences',
    { headers: operator, body: { label: 'gate 1', grants: ['identify'], activationCode: code } });
  t.equal(added.status, 200, JSON.stringify(added.body));
  const licenceId: string = added.body.licenceId;
  const granted = await json(cloud.address, 'PATCH', `/account/v1/licences/${licenceId}`,
    { headers: operator, body: { grants: ['get', 'identify'] } });
  t.same(granted.body.grants, ['get', 'identify']);

  // 4. The installation command on the licence line, run for real into a temporary root.
  const line = await json(cloud.address, 'GET', `/account/v1/licences/${licenceId}`, { headers: operator });
  const command: string = line.body.installCommand;
  t.match(command, /sha256sum/, 'the command checks the package by its sha256');
  const root = path.join(dir, 'board');
  fs.mkdirSync(root);
  const installed = await execFileAsync('sh', ['-c', command], {
    env: { ...process.env, FACE_CHECK_PREFIX: root, npm_config_prefer_offline: 'true' },
    maxBuffer: 64 * 1024 * 1024, timeout: 300_000,
  });
  t.ok(fs.existsSync(path.join(root, 'usr/local/bin/face-check')), 'the program is installed under the root');
  const deviceIni = path.join(root, 'etc/face-check/face-check.ini');
  const iniText = fs.readFileSync(deviceIni, 'utf8');
  t.match(iniText, new RegExp(`server_url = ${cloud.address.replace(/[.:/]/g, '\\$&')}`), 'the ini names the cloud');
  t.match(iniText, /key = fcl_/, 'the ini holds the licence key');
  t.ok(fs.existsSync(path.join(root, 'etc/systemd/system/face-check.service')), 'the systemd unit is written');
  t.comment(installed.stdout.split('\n').slice(-4).join('\n'));

  // This machine is not a board: no camera, any free port, and a machine id of its own.
  const machineId = path.join(dir, 'machine-id');
  fs.writeFileSync(machineId, 'e2e0device0machine0id0000000001\n');
  fs.writeFileSync(deviceIni, iniText
    .replace(/^port = .*$/m, 'port = 0')
    .replace(/^source = .*$/m, 'source = none')
    .replace(/^\[licence\]$/m, `[licence]\nmachine_id_file = ${machineId}`));

  // 5. The installed device checks in at start, then serves what its grants allow.
  const device = await spawnListening(path.join(root, 'usr/local/bin/face-check'), ['serve', '--config', deviceIni], { timeoutMs: 90_000 });
  t.teardown(async () => { device.child.kill('SIGTERM'); await device.exited; });
  const apiKey = /Api-Key: (\S+)/.exec(device.output())?.[1];
  t.ok(apiKey, 'the device printed its first API key');
  const deviceHeaders = { 'api-key': apiKey! };
  const get = await json(device.address, 'GET', '/person/face/nobody', { headers: deviceHeaders });
  t.same([get.status, get.body.code], [404, 'NF_001'], 'granted "get" is served');
  const img = Buffer.alloc(8).toString('base64');
  const compare = await json(device.address, 'POST', '/person/compare-face',
    { headers: deviceHeaders, body: { targetImage: img, sourceImage: img } });
  t.equal(compare.status, 403, 'ungranted "compare" is refused');
  t.match(compare.body.message, /compare/, 'the refusal names the missing grant');

  // The cloud shows the device, its check-ins and its usage.
  const seen = await waitFor('usage on the cloud', async () => {
    const l = await json(cloud.address, 'GET', `/account/v1/licences/${licenceId}`, { headers: operator });
    return (l.body.usageToday?.get ?? 0) >= 1 ? l.body : undefined;
  });
  t.ok(seen.device?.fingerprint, 'the licence is bound to the device');
  t.ok(seen.lastCheck?.at, 'the last check is shown');

  // A revocation reaches the running device at its next check (interval 1 s), without a restart.
  const revoked = await json(cloud.address, 'POST', `/account/v1/licences/${licenceId}/revoke`, { headers: operator });
  t.equal(revoked.body.status, 'revoked');
  const refused = await waitFor('the device to refuse', async () => {
    const r = await json(device.address, 'GET', '/person/face/nobody', { headers: deviceHeaders });
    return r.status === 403 ? r : undefined;
  });
  t.match(refused.body.message, /revoked/i);
});
