// A cloud whose device package lacks a board platform's prebuilt addon (a checkout set up with `npm ci` but
// not `npm run prebuild`, or a package_file made without them) serves no package that would compile on the
// board: it warns at start naming what is missing and how to fix it, the package route answers 503
// explained, and licence lines offer no installation command but say why (API, back-office, CLI).
import fs from 'node:fs';
import t, { type Test } from 'tap';
import { licencePage } from '../../src/back-office/views/licence';
import { licencesPage } from '../../src/back-office/views/licences';
import { main } from '../../src/cli/main';
import { loadConfig } from '../../src/config/load';
import { openStore } from '../../src/storage/lmdb/store';
import { startTestApp, tempDir } from '../helpers/app';
import { writeIni } from '../helpers/service-process';
import { BOARD_PREBUILDS, writeTinyTarball } from '../helpers/tiny-package';

async function cloud(t: Test, prebuilds: typeof BOARD_PREBUILDS) {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const packageFile = writeTinyTarball(dir, { prebuilds });
  const logs: string[] = [];
  const app = await startTestApp({
    tune: (c) => { c.server.mode = 'cloud'; c.licensing.package_file = packageFile; c.plans.free_activation_code = false; },
    deps: { logger: { level: 'warn', stream: { write: (line: string) => { logs.push(line); } } } },
  });
  t.teardown(() => app.close());
  await app.app.ready();
  return { app, logs, packageFile };
}

async function json(a: Awaited<ReturnType<typeof cloud>>['app'], method: 'GET' | 'POST', url: string, body?: unknown, token?: string) {
  const res = await a.call({ method, url, key: null, payload: body as object, headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.statusCode, body: res.body ? res.json() : undefined };
}

/** An operator with one licence, through the account API. */
async function licenceLine(t: Test, a: Awaited<ReturnType<typeof cloud>>['app']) {
  const credentials = { email: 'kiosks@example.com', password: 'correct horse battery staple' };
  t.equal((await json(a, 'POST', '/account/v1/register', credentials)).status, 200);
  const token = (await json(a, 'POST', '/account/v1/sessions', credentials)).body.token as string;
  const added = await json(a, 'POST', '/account/v1/licences', { label: 'gate', grants: ['identify'] }, token);
  const line = await json(a, 'GET', `/account/v1/licences/${added.body.licenceId}`, undefined, token);
  return { line, token };
}

async function logged(logs: string[], pattern: RegExp): Promise<string | undefined> {
  // The start check reads the package asynchronously: the line follows shortly after ready().
  for (let i = 0; i < 50 && !logs.some((l) => pattern.test(l)); i++) await new Promise((r) => setTimeout(r, 20));
  return logs.find((l) => pattern.test(l));
}

t.test('without the arm64 prebuild: a warning at start, no package served, no installation command', async (t) => {
  const { app, logs, packageFile } = await cloud(t, [{ platform: 'linux-x64', machine: 62 }]);

  const warning = await logged(logs, /devices cannot be installed/);
  t.ok(warning, 'warned at start');
  const entry = JSON.parse(warning!);
  t.equal(entry.level, 40, 'a warning');
  t.same(entry.missing, ['linux-arm64']);
  t.match(entry.msg, 'lacks the prebuilt addon for linux-arm64, so installing it would compile the addon on the board');
  t.match(entry.msg, `replace [licensing] package_file (${packageFile}) with a package made by \`npm run prebuild\``);

  const { line } = await licenceLine(t, app);
  t.equal(line.status, 200, 'the licence line is still shown');
  t.equal(line.body.installCommand, null, 'no installation command');
  t.match(line.body.installUnavailable, /^No installation command: this cloud's device package lacks the prebuilt addon for linux-arm64/);
  t.notMatch(line.body.installUnavailable, /\//, 'no path of the cloud in what any operator sees');

  const download = await app.call({ method: 'GET', url: '/licence/v1/package', key: null, headers: { 'licence-key': line.body.licenceKey } });
  t.equal(download.statusCode, 503);
  t.equal(download.json().code, 'SERVICE_UNAVAILABLE');
  t.match(download.json().message, /lacks the prebuilt addon for linux-arm64, and a device never compiles it/);
  t.notMatch(download.body, /\/|tgz/, 'no path');

  // The back-office shows the reason where the command would be.
  const operator = { accountId: 'acc', email: 'kiosks@example.com', role: 'operator' as const };
  const usage = { licenceId: line.body.licenceId, from: '2030-01-01', to: '2030-01-01', days: [] };
  for (const html of [String(licencePage({ operator, csrf: 'x', licence: line.body, usage, deviceKeys: [] })),
    String(licencesPage({ operator, csrf: 'x', licences: [line.body], codeRequired: false }))]) {
    t.match(html, /<p class="problem" id="install-lic_[0-9a-f]+">No installation command: this cloud&#39;s device package lacks the prebuilt addon for linux-arm64/);
    t.notMatch(html, /<pre id="install-/, 'no command to copy');
  }
});

t.test('the CLI says why there is no command, with the fix, and exits 1 for install-command', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const packageFile = writeTinyTarball(dir, { prebuilds: [] });
  const ini = writeIni(dir, ['[licensing]', `package_file = ${packageFile}`].join('\n'));
  const store = await openStore(loadConfig(ini).storage.path);
  const at = new Date().toISOString();
  await store.accounts.create({ accountId: 'acme', email: 'acme@example.com', passwordHash: 'unused', role: 'operator', plan: 'paid', created: at, updated: at });
  await store.close();
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`err: ${l}`) };
  t.equal(await main(['licence', 'create', '--config', ini, '--account', 'acme', '--grants', 'identify'], io), 0, 'the licence is created');
  t.match(lines.join('\n'), /err: no installation command: the device package lacks the prebuilt addon for linux-x64 and linux-arm64.*npm run prebuild/);
  const id = /created licence (lic_[0-9a-f]+)/.exec(lines.join('\n'))?.[1];
  lines.length = 0;
  t.equal(await main(['licence', 'install-command', '--config', ini, id!], io), 1);
  t.match(lines.join('\n'), /^err: no installation command: .*replace \[licensing\] package_file/);
});

t.test('with both prebuilds: no warning, and the command checks the board against the package\'s Node range', async (t) => {
  const { app, logs } = await cloud(t, BOARD_PREBUILDS);
  const { line } = await licenceLine(t, app);
  t.match(line.body.installCommand, /Linux\/x86_64\|Linux\/aarch64/);
  t.match(line.body.installCommand, 'face-check needs 20.9.0 or later');
  t.notOk('installUnavailable' in line.body);
  await new Promise((r) => setTimeout(r, 200));
  t.same(logs.filter((l) => /devices cannot be installed/.test(l)), [], 'no warning');
});
