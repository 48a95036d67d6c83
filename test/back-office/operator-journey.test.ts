// The operator's whole journey, from a licence line to a working kiosk, in one run of real processes with
// nothing mocked at the HTTP boundary: a cloud from an empty store; in Chromium the operator registers, signs
// in, adds a licence with an administrator's activation code, sets its grants, picks the camera and the port
// of the device and reads the installation command, and creates two device keys on the licence line. The
// command runs on a board whose compilers, make and python are stand-ins that record being called, into a
// temporary root: it installs, compiles nothing, and the ini holds the port and camera picked. The installed
// device starts from that root on the board's PATH and checks in; the first device key is served; the second,
// revoked in the back-office, is refused from the device's next check; a key made on the board is served too.
// Requests answered before a SIGTERM, while the cloud is away before a kill -9, and after the last restart
// all reach the licence's usage on the cloud, each exactly once. Skips where the installation command cannot
// run (no curl or sha256sum; no arm64 prebuild outside CI) or no Chromium is found (required in CI).
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Page } from 'playwright-core';
import { main } from '../../src/cli/main';
import { browserSkipReason, launchBrowser } from '../helpers/browser';
import { freePort } from '../helpers/free-port';
import { installSkipReason, packageWithThisAddon } from '../helpers/served-package';
import { startServiceProcess, writeIni } from '../helpers/service-process';
import { spawnListening, type ListeningProcess } from '../helpers/spawn-listening';
import { board, runOnBoard } from '../helpers/toolchain-free-board';

const execFileAsync = promisify(execFile);
const EMAIL = 'kiosk.operator@example.com';
const PASSWORD = 'correct horse battery staple';

async function json(base: string, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${url}`, {
    method, headers: { 'content-type': 'application/json', ...opts.headers }, body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Polls `probe` until it gives a value; fails past the bound. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Creates a device key on the licence page (role match) and reads it from the page that shows it once. */
async function createDeviceKey(page: Page, label: string): Promise<{ key: string; keyId: string }> {
  await page.locator('#device-key-label').fill(label);
  await page.getByLabel('Role').selectOption('match');
  await page.getByRole('button', { name: 'Create the device key' }).click();
  const key = (await page.locator('#new-device-key').textContent()) ?? '';
  await page.getByRole('link', { name: 'Back to the licence' }).click();
  return { key, keyId: crypto.createHash('sha256').update(key).digest('hex').slice(0, 12) };
}

const skip = installSkipReason() ?? browserSkipReason();

t.test('an operator goes from registering to a kiosk that serves, refuses a revoked key and counts each request once',
  { skip }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-journey-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

  // 1. A cloud from an empty store, checking devices every second so the journey does not wait on the default.
  const cloudDir = path.join(dir, 'cloud');
  fs.mkdirSync(cloudDir);
  const packageFile = await packageWithThisAddon(dir);
  const cloudIni = writeIni(cloudDir, ['[licensing]', 'check_interval_seconds = 1', 'document_valid_seconds = 60',
    ...(packageFile ? [`package_file = ${packageFile}`] : [])].join('\n'));
  // A port of its own: the cloud is restarted at the same address, which the installed device names.
  fs.writeFileSync(cloudIni, fs.readFileSync(cloudIni, 'utf8').replace(/^port = 0$/m, `port = ${await freePort()}`));
  let cloud = await startServiceProcess(cloudIni, 'real', 120_000);
  t.teardown(() => cloud.stop());

  // 2. The back-office in Chromium: register, sign out and in again.
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const context = await browser.newContext({ baseURL: cloud.address, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  await page.goto('/back-office/register');
  await page.getByLabel('E-mail address').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Register' }).click();
  t.match(page.url(), /\/back-office\/keys\/new\?done=registered$/, 'registered, on the free plan');
  const cloudKey = (await page.locator('#new-api-key').textContent()) ?? '';
  t.match(cloudKey, /^fc_/, 'with the free plan\'s cloud key');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('E-mail address').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  t.match(page.url(), /\/back-office\/account$/, 'signed in');

  // The administrator prints an activation code for the free plan (the CLI on the cloud node).
  const lines: string[] = [];
  t.equal(await main(['licence', 'activation-code', '--config', cloudIni, '--plan', 'free'],
    { out: (l) => lines.push(l), err: (l) => lines.push(l) }), 0, 'licence activation-code --plan free');
  const code = /\b[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}\b/.exec(lines.join('\n'))?.[0];
  t.ok(code, 'an activation code is printed');

  // The licence, with the code; then its grants: get only.
  await page.getByRole('navigation').getByRole('link', { name: 'Licences', exact: true }).click();
  await page.getByLabel('Label').fill('kiosk 1');
  await page.getByLabel('Activation code').fill(code!);
  await page.getByRole('button', { name: 'Add the licence' }).click();
  t.match(page.url(), /\/back-office\/licences\/lic_[0-9a-f]{16}\?done=licence-added$/, 'the licence is added');
  const licenceId = /lic_[0-9a-f]{16}/.exec(page.url())![0];
  await page.getByLabel(/^get:/).check();
  await page.getByRole('button', { name: 'Save grants and settings' }).click();
  t.match(await page.textContent('.notice'), /saved/, 'the grants are saved');

  // The camera (this machine has none) and a free port, then the command that sets them up.
  const port = await freePort();
  await page.getByLabel('Camera', { exact: true }).selectOption('none');
  await page.getByLabel('Port', { exact: true }).fill(String(port));
  await page.getByRole('button', { name: 'Show the command' }).click();
  t.match(page.url(), new RegExp(`\\?camera=none&port=${port}$`), 'the pick is in the page address');
  const command = (await page.locator(`#install-${licenceId}`).textContent()) ?? '';
  t.match(command, new RegExp(`device install .* --camera none --port ${port}'$`), 'the command sets up the camera and port picked');

  // Two device keys on the licence line, each shown once.
  const kioskKey = await createDeviceKey(page, 'kiosk app');
  const oldKey = await createDeviceKey(page, 'old app');
  t.match(kioskKey.key, /^fcd_[A-Za-z0-9_-]{32}$/, 'the first device key is shown');
  t.match(oldKey.key, /^fcd_[A-Za-z0-9_-]{32}$/, 'the second device key is shown');
  const keysTable = page.locator('table:has(#device-keys-caption)');
  t.match(await keysTable.textContent(), new RegExp(`${kioskKey.keyId}[\\s\\S]*active[\\s\\S]*${oldKey.keyId}[\\s\\S]*active`), 'both listed, active');

  // 3. The command on a board without compilers, into a temporary root.
  const b = board(dir);
  const root = path.join(dir, 'board-root');
  fs.mkdirSync(root);
  const installed = await runOnBoard(command, b, dir, root);
  t.equal(installed.code, 0, installed.code === 0 ? 'the command installs' : `the command failed:\n${installed.stderr.slice(-3000)}`);
  t.same(b.calls(), [], 'nothing was compiled: no compiler, make, cmake or python was called');
  const deviceIni = path.join(root, 'etc/face-check/face-check.ini');
  const iniText = fs.readFileSync(deviceIni, 'utf8');
  t.match(iniText, new RegExp(`^port = ${port}$`, 'm'), 'the installed ini has the port picked');
  t.match(iniText, /^source = none$/m, 'and the camera picked');
  t.comment(`installed in ${installed.seconds.toFixed(0)} s on a board without a toolchain`);

  // 4. The installed device, as the unit starts it but on this machine: a machine id of its own (the last
  // section of the ini is [licence]); port and camera stay as the command wrote them.
  const machineId = path.join(dir, 'machine-id');
  fs.writeFileSync(machineId, `${crypto.randomBytes(16).toString('hex')}\n`);
  fs.appendFileSync(deviceIni, `machine_id_file = ${machineId}\n`);
  const program = path.join(root, 'usr/local/bin/face-check');
  const boardEnv = { PATH: b.bin, HOME: os.homedir() };
  let device: ListeningProcess | undefined;
  t.teardown(async () => { device?.child.kill('SIGKILL'); await device?.exited; });
  const start = async () => {
    device = await spawnListening(program, ['serve', '--config', deviceIni], { env: boardEnv, timeoutMs: 120_000 });
    return device;
  };

  // What the licence's usage must end at: the requests the licence gate let through and that were answered.
  let metered = 0;
  const get = (key: string) => json(device!.address, 'GET', '/person/face/nobody', { headers: { 'api-key': key } });
  const served = async (key: string, what: string) => {
    const r = await get(key);
    t.same([r.status, r.body?.code], [404, 'NF_001'], what);
    metered++;
  };

  await start();
  t.equal(device!.port, port, 'the device listens on the port picked');
  t.match(device!.output(), new RegExp(`licence ${licenceId} checked with ${cloud.address.replace(/[.:/]/g, '\\$&')}`), 'it checked in before listening');
  await page.reload();
  const facts = (await page.locator('dl.facts').textContent()) ?? '';
  t.notMatch(facts, /Last check\s*never/, 'the back-office shows the check');
  t.match(facts, /Device\s*[0-9a-f]{16}… \(bound /, 'and the device the licence is bound to');

  await served(kioskKey.key, 'the first device key from the back-office is served');
  await served(oldKey.key, 'so is the second, before it is revoked');
  const ungranted = await json(device!.address, 'POST', '/person/recognize-face', { headers: { 'api-key': kioskKey.key }, body: { faceImage: 'AAAA' } });
  t.equal(ungranted.status, 403, 'a request outside the grants is refused (and not counted)');
  t.equal((await get(cloudKey)).status, 401, 'the account\'s cloud key is not a device key (nor counted)');

  // The second key revoked in the back-office; the device refuses it from its next check.
  await page.getByRole('link', { name: `Revoke device key ${oldKey.keyId}` }).click();
  await page.getByRole('button', { name: 'Revoke the device key' }).click();
  t.match(await page.textContent('.notice'), /device key is revoked/, 'the back-office revokes the second key');
  t.match(await keysTable.textContent(), new RegExp(`${oldKey.keyId}[\\s\\S]*revoked`), 'the line shows it revoked');
  const refused = await waitFor('the device to refuse the revoked key', async () => {
    const r = await get(oldKey.key);
    if (r.status === 404) metered++; // served until the check: counted like any other
    return r.status === 401 ? r : undefined;
  });
  t.equal(refused.status, 401, 'the revoked key is refused at the device\'s next check');
  await served(kioskKey.key, 'the other key is still served');

  // 5. Usage across an orderly stop, a crash and restarts.
  // The account API's usage of the licence (two days: the run may cross midnight UTC), every grant summed.
  const session = await json(cloud.address, 'POST', '/account/v1/sessions', { body: { email: EMAIL, password: PASSWORD } });
  const operator = { authorization: `Bearer ${session.body.token}` };
  const usageOnCloud = async (): Promise<number> => {
    const usage = await json(cloud.address, 'GET', `/account/v1/licences/${licenceId}/usage?days=2`, { headers: operator });
    return (usage.body.days as Array<{ requests: Record<string, number> }>)
      .reduce((n, d) => n + Object.values(d.requests).reduce((a, b) => a + b, 0), 0);
  };
  for (let i = 0; i < 3; i++) await served(kioskKey.key, `request ${i + 1} before the SIGTERM`);
  device!.child.kill('SIGTERM');
  t.equal(await device!.exited, 0, 'an orderly stop');
  t.equal(await usageOnCloud(), metered, 'everything answered so far reached the cloud by the stop');

  // A key made on the board itself works too (the README's way for a board without a cloud).
  const local = await execFileAsync(program, ['keys', 'create', '--config', deviceIni, '--role', 'match'], { env: boardEnv });
  const boardKey = /Api-Key: (fc_\S+)/.exec(local.stdout)?.[1] ?? '';
  t.ok(boardKey, 'keys create on the board prints a key');

  await start();
  await served(boardKey, 'a key made on the board is served');

  // The cloud goes away: the device serves on its licence document and keeps what it answered in its store;
  // then it crashes, and the cloud comes back before it restarts.
  await waitFor('the periodic check to report', async () => ((await usageOnCloud()) === metered ? true : undefined));
  const reported = metered;
  t.equal(await cloud.stop(), 0, 'the cloud stops');
  for (let i = 0; i < 4; i++) await served(kioskKey.key, `request ${i + 1} while the cloud is away, before the kill -9`);
  device!.child.kill('SIGKILL');
  await device!.exited;
  cloud = await startServiceProcess(cloudIni, 'real', 120_000);
  t.equal(await usageOnCloud(), reported, 'the cloud is back without the requests answered while it was away');
  await start();
  t.equal(await usageOnCloud(), metered, 'they arrive with the device\'s first check after the restart');

  for (let i = 0; i < 5; i++) await served(kioskKey.key, `request ${i + 1} after the restart`);
  await waitFor('the last requests on the cloud', async () => ((await usageOnCloud()) >= metered ? true : undefined));
  device!.child.kill('SIGTERM');
  t.equal(await device!.exited, 0, 'the device stops');
  device = undefined;
  t.equal(await usageOnCloud(), metered, `the licence's usage is each of the ${metered} answered requests exactly once`);
});
