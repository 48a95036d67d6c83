// The installation of a device: the generated command (run with sh against a local HTTP server: it refuses a
// package whose sha256 differs, and otherwise hands exactly the served file to npm and then runs device
// install), the command's quoting against hostile inputs, `face-check device install` (the pinned public key,
// the files it writes, their modes and contents, the ini loading as a licensed device, systemd-analyze on the
// unit), and the cloud's public URL.
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { main } from '../../src/cli/main';
import { defaultConfig, loadConfig } from '../../src/config/load';
import { cameraSourceNames } from '../../src/device/camera-catalog';
import { checkCameraConfig } from '../../src/device/camera-settings';
import { installCommand } from '../../src/install/install-command';
import { publicKeySha256 } from '../../src/licensing/licence-document';
import { publicUrl } from '../../src/licensing/cloud/public-url';
import { tempDir } from '../helpers/app';

// Every compiled source a board can run (not replay, which needs a recording there), or none.
const CAMERAS = [...cameraSourceNames().filter((n) => n !== 'replay'), 'none'].join(', ');

const KEY = `fcl_${'Ab3_-x'.repeat(5)}Zz`;
const execFileAsync = promisify(execFile);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

function sha256(data: Buffer | string): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

function modeOf(file: string): number {
  return fs.statSync(file).mode & 0o777;
}

/** A stand-in cloud: the two licence routes, with what it was asked. */
async function fakeCloud(t: Test, answer: { packageBytes?: Buffer; publicKey?: string }) {
  const seen: { url: string; licenceKey?: string }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', licenceKey: req.headers['licence-key'] as string | undefined });
    if (req.url === '/licence/v1/package' && answer.packageBytes && req.headers['licence-key'] === KEY) {
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(answer.packageBytes);
    } else if (req.url === '/licence/v1/public-key' && answer.publicKey) {
      res.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ publicKey: answer.publicKey, sha256: publicKeySha256(answer.publicKey) }));
    } else {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"LC_005","message":"Unknown licence key"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/**
 * An `npm` first on PATH that records its arguments and environment, keeps the tarball it was given, and
 * installs a `face-check` that records its own arguments: the command's flow without a real npm install.
 */
function fakeNpm(dir: string): { path: string; log: string } {
  const bin = path.join(dir, 'fake-bin');
  const log = path.join(dir, 'log');
  fs.mkdirSync(bin);
  fs.mkdirSync(log);
  fs.writeFileSync(path.join(bin, 'npm'), `#!/bin/sh
printf '%s\\n' "$@" > "${log}/npm.args"
prefix=""; prev=""; last=""
for a in "$@"; do [ "$prev" = "--prefix" ] && prefix="$a"; prev="$a"; last="$a"; done
cp "$last" "${log}/installed.tgz"
mkdir -p "$prefix/bin" "$prefix/lib/node_modules/face-check/scripts"
echo "require('fs').writeFileSync('${log}/install-step', 'ran')" > "$prefix/lib/node_modules/face-check/scripts/install.js"
printf '#!/bin/sh\\nprintf "%%s\\\\n" "$@" > "${log}/face-check.args"\\n' > "$prefix/bin/face-check"
chmod +x "$prefix/bin/face-check"
`, { mode: 0o755 });
  return { path: bin, log };
}

async function runCommand(command: string, env: Record<string, string>) {
  try {
    const { stdout, stderr } = await execFileAsync('sh', ['-c', command], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

t.test('the command refuses a package whose sha256 differs: exit non-zero, nothing installed', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const served = Buffer.from('a package someone swapped in');
  const cloud = await fakeCloud(t, { packageBytes: served });
  const npm = fakeNpm(dir);
  const root = path.join(dir, 'root');
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(root);
  fs.mkdirSync(tmp);
  const command = installCommand({
    serverUrl: cloud.url, licenceKey: KEY, packageSha256: sha256('the package the cloud meant'), publicKeySha256: sha256('pk'), nodeMinimum: '20.9.0',
  });
  const r = await runCommand(command, { FACE_CHECK_PREFIX: root, PATH: `${npm.path}:${process.env.PATH}`, TMPDIR: tmp });
  t.not(r.code, 0);
  t.match(r.stderr, /sha256 differs\); nothing installed/);
  t.same(cloud.seen, [{ url: '/licence/v1/package', licenceKey: KEY }], 'downloaded once with the licence key');
  t.notOk(fs.existsSync(path.join(npm.log, 'npm.args')), 'npm never ran');
  t.same(fs.readdirSync(root), [], 'nothing under the install root');
  t.same(fs.readdirSync(tmp), [], 'the download is removed on exit');
});

t.test('the command installs the served file with npm under the prefix, then runs device install', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const served = crypto.randomBytes(4096);
  const cloud = await fakeCloud(t, { packageBytes: served });
  const npm = fakeNpm(dir);
  const root = path.join(dir, 'root');
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(root);
  fs.mkdirSync(tmp);
  const pk = sha256('pk');
  const r = await runCommand(installCommand({ serverUrl: cloud.url, licenceKey: KEY, packageSha256: sha256(served), publicKeySha256: pk, nodeMinimum: '20.9.0' }),
    { FACE_CHECK_PREFIX: `${root}/`, PATH: `${npm.path}:${process.env.PATH}`, TMPDIR: tmp });
  t.equal(r.code, 0, r.stderr);
  t.same(fs.readFileSync(path.join(npm.log, 'installed.tgz')), served, 'npm got exactly the checked file');
  const npmArgs = fs.readFileSync(path.join(npm.log, 'npm.args'), 'utf8').trim().split('\n');
  t.same(npmArgs.slice(0, -1), ['install', '-g', '--ignore-scripts', '--no-audit', '--no-fund', '--prefix', `${root}/usr/local`],
    'no install script of any dependency runs');
  t.equal(fs.readFileSync(path.join(npm.log, 'install-step'), 'utf8').trim(), 'ran', "the package's own install step runs after npm");
  t.same(fs.readFileSync(path.join(npm.log, 'face-check.args'), 'utf8').trim().split('\n'),
    ['device', 'install', '--root', root, '--server-url', cloud.url, '--licence-key', KEY, '--public-key-sha256', pk]);
  t.same(fs.readdirSync(tmp), [], 'the download is removed on exit');
});

t.test('the command takes only inputs that need no quoting, and fails closed on anything else', async (t) => {
  const good = { serverUrl: 'https://cloud.example.com:8443/fc', licenceKey: KEY, packageSha256: sha256('p'), publicKeySha256: sha256('k'), nodeMinimum: '20.9.0' };
  const command = installCommand(good);
  t.match(command, /^sh -c '[^']+'$/, 'one single-quoted script');
  execFileSync('sh', ['-n', '-c', command.slice("sh -c '".length, -1)]);
  t.ok(command.includes(`"${good.serverUrl}/licence/v1/package"`));

  const hostileUrls = [
    "https://x.example.com'; rm -rf / #", 'https://x.example.com/$(id)', 'https://x.example.com/`id`', 'https://a b.example.com',
    'https://x.example.com/"', 'https://x.example.com;id', 'https://x.example.com/\nid', 'https://x.example.com/', 'ftp://x.example.com',
    'https://x.example.com/a\\b', 'https://x.example.com/?q=1', 'https://x.example.com/#f', 'https://user@x.example.com', '',
  ];
  for (const serverUrl of hostileUrls) t.throws(() => installCommand({ ...good, serverUrl }), /server URL/, JSON.stringify(serverUrl));
  for (const licenceKey of [`${KEY}'`, 'fcl_short', `fcl_${'a'.repeat(31)}$`, KEY.replace('fcl_', 'fc_x'), `${KEY} `]) {
    t.throws(() => installCommand({ ...good, licenceKey }), /licence key/, JSON.stringify(licenceKey));
  }
  for (const nodeMinimum of ['20.9', '20.9.0;id', "20'", '']) {
    t.throws(() => installCommand({ ...good, nodeMinimum }), /Node minimum/, JSON.stringify(nodeMinimum));
  }
  t.match(installCommand({ ...good, choice: { camera: 'openni2', port: 9090 } }), / --camera openni2 --port 9090'$/);
  t.notMatch(installCommand({ ...good, choice: { camera: 'openni2', port: 8080 } }), /--port/, 'the default port is left out');
  for (const choice of [{ camera: "openni2'; id #" }, { camera: 'x' }, { port: 0 }, { port: 65536 }, { port: 1.5 }]) {
    t.throws(() => installCommand({ ...good, choice }), /The camera is one of|The port is a number/, JSON.stringify(choice));
  }
  for (const bad of [sha256('p').toUpperCase(), sha256('p').slice(1), `${sha256('p').slice(1)}'`]) {
    t.throws(() => installCommand({ ...good, packageSha256: bad }), /package sha256/);
    t.throws(() => installCommand({ ...good, publicKeySha256: bad }), /public key sha256/);
  }
  // Whatever the inputs: either refused, or a script without a single quote of its own.
  fc.assert(fc.property(fc.string(), fc.string(), (host, suffix) => {
    let out: string;
    try {
      out = installCommand({ ...good, serverUrl: `https://${host}`, licenceKey: `fcl_${suffix}` });
    } catch {
      return true;
    }
    return !out.slice("sh -c '".length, -1).includes("'") && !/[$`\\"\s;]/.test(host + suffix);
  }), { numRuns: 2000, seed: 7 });
});

function keyPair() {
  return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

t.test('device install pins the public key and writes the ini, the key, the state folder and the unit', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const publicKey = keyPair();
  const cloud = await fakeCloud(t, { publicKey });
  const root = path.join(dir, 'root');
  const args = ['device', 'install', '--root', root, '--server-url', cloud.url, '--licence-key', KEY,
    '--public-key-sha256', publicKeySha256(publicKey)];
  const c = capture();
  t.equal(await main(args, c.io), 0, c.err.join('\n'));

  const etc = path.join(root, 'etc', 'face-check');
  const ini = path.join(etc, 'face-check.ini');
  const pem = path.join(etc, 'licence-server.pem');
  const state = path.join(root, 'var', 'lib', 'face-check');
  const unit = path.join(root, 'etc', 'systemd', 'system', 'face-check.service');
  t.equal(fs.readFileSync(pem, 'utf8'), publicKey);
  t.equal(modeOf(pem), 0o644);
  t.equal(modeOf(ini), 0o600, 'the ini holds the licence key');
  t.equal(modeOf(state), 0o700);
  t.equal(modeOf(unit), 0o644);

  const config = loadConfig(ini);
  t.equal(config.server.mode, 'device');
  t.equal(config.server.host, '127.0.0.1');
  t.equal(config.server.port, 8080);
  t.equal(config.storage.path, state);
  t.equal(config.camera.source, 'freenect', 'the default camera');
  t.same(config.licence, { ...defaultConfig().licence, server_url: cloud.url, key: KEY, public_key_file: pem, development: false });
  t.notMatch(fs.readFileSync(ini, 'utf8'), /development/, 'no development switch at all');

  const unitText = fs.readFileSync(unit, 'utf8');
  t.match(unitText, `\nExecStart=${root}/usr/local/bin/face-check serve --config ${ini}\n`);
  t.match(unitText, `\nReadWritePaths=${state}\n`);
  for (const line of ['Type=simple', 'User=face-check', 'Restart=on-failure', 'RestartSec=10', 'NoNewPrivileges=yes',
    'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes', 'SupplementaryGroups=plugdev video', 'WantedBy=multi-user.target']) {
    t.ok(unitText.split('\n').includes(line), line);
  }
  t.ok(c.out.some((l) => l.includes(`wrote ${ini}`)) && c.out.some((l) => l.includes(`wrote ${unit}`)), 'says what it wrote');
  t.ok(c.out.some((l) => /^ {2}systemctl enable face-check$/.test(l)), 'prints the steps a test root does not run');
  t.notOk(c.out.join('\n').includes(KEY), 'the licence key is not printed');
  t.match(c.out.at(-1), new RegExp(`^clients on this board send an Api-Key: a device key of the licence line \\(fcd_.*keys create --config ${ini} --role match$`),
    'says how a client on the board authenticates');
  t.same(cloud.seen.map((s) => s.url), ['/licence/v1/public-key']);

  // Again, over the state the service made meanwhile and an ini edited by hand.
  fs.writeFileSync(path.join(state, 'data.mdb'), 'persons');
  fs.appendFileSync(ini, '\n; edited\n');
  const again = capture();
  t.equal(await main([...args, '--camera', 'synthetic'], again.io), 0, again.err.join('\n'));
  t.equal(fs.readFileSync(path.join(state, 'data.mdb'), 'utf8'), 'persons', 'the state folder is kept');
  t.equal(loadConfig(ini).camera.source, 'synthetic');
  t.match(fs.readFileSync(`${ini}.previous`, 'utf8'), /; edited/, 'the replaced ini is kept aside');
  t.equal(modeOf(`${ini}.previous`), 0o600);
  t.same(fs.readdirSync(etc).sort(), ['face-check.ini', 'face-check.ini.previous', 'licence-server.pem'], 'no temporary files');

  // The camera and the port chosen at install: the source's section is written with its options at their defaults.
  const orbbec = capture();
  t.equal(await main([...args, '--camera', 'openni2', '--port', '9090'], orbbec.io), 0, orbbec.err.join('\n'));
  const chosen = loadConfig(ini);
  t.equal(chosen.server.port, 9090);
  t.equal(chosen.camera.source, 'openni2');
  const iniText = fs.readFileSync(ini, 'utf8');
  t.match(iniText, /\n\[camera\.openni2\]\n; Orbbec .*\n/, 'the source\'s own section, named by what it reads');
  t.match(iniText, /\n;uri = \n/, 'its options commented out at their defaults');
  t.match(iniText, /\n;registration = auto\n/);
  t.notMatch(iniText, /record_path/, 'no option the program sets itself');
  t.same(checkCameraConfig(chosen)?.options.uri, '', 'the written file passes the camera check');
});

t.test('device install refuses a public key whose sha256 is not the pinned one, and writes nothing', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cloud = await fakeCloud(t, { publicKey: keyPair() });
  const root = path.join(dir, 'root');
  const c = capture();
  const pinned = publicKeySha256(keyPair());
  t.equal(await main(['device', 'install', '--root', root, '--server-url', cloud.url, '--licence-key', KEY,
    '--public-key-sha256', pinned], c.io), 1);
  t.match(c.err.join('\n'), new RegExp(`refusing the public key of ${cloud.url}: .*names ${pinned}.*nothing was written`));
  t.notOk(fs.existsSync(root));

  const unreachable = capture();
  t.equal(await main(['device', 'install', '--root', root, '--server-url', 'http://127.0.0.1:1', '--licence-key', KEY,
    '--public-key-sha256', pinned], unreachable.io), 1);
  t.match(unreachable.err.join('\n'), /cannot get the cloud's public key from http:\/\/127\.0\.0\.1:1\/licence\/v1\/public-key/);
  t.notOk(fs.existsSync(root));
});

t.test('device install checks its arguments', async (t) => {
  const base = ['device', 'install', '--root', '/nonexistent-root', '--server-url', 'http://127.0.0.1:1', '--licence-key', KEY,
    '--public-key-sha256', sha256('k')];
  const cases: [string[], RegExp][] = [
    [base.map((a) => (a === KEY ? 'fcl_x' : a)), /--licence-key: expected/],
    [base.map((a) => (a === 'http://127.0.0.1:1' ? 'http://127.0.0.1:1/\n[x]' : a)), /--server-url: expected/],
    [base.map((a) => (a === sha256('k') ? 'abc' : a)), /--public-key-sha256: expected/],
    [[...base, '--camera', 'replay'], new RegExp(`--camera: one of ${CAMERAS}`)],
    [[...base, '--camera', 'kinect2'], new RegExp(`--camera: one of ${CAMERAS}`)],
    [[...base, '--port', '0'], /--port: a port number, 1 to 65535/],
    [[...base, '--port', '80a'], /--port: a port number, 1 to 65535/],
    [base.filter((a, i) => i < 6), /needs --licence-key/],
    [['device', 'uninstall'], /only subcommand is install/],
  ];
  for (const [argv, message] of cases) {
    const c = capture();
    t.equal(await main(argv, c.io), 2, argv.join(' '));
    t.match(c.err[0], message);
  }
  t.notOk(fs.existsSync('/nonexistent-root'));
});

t.test('systemd-analyze verify accepts the written unit', { skip: !fs.existsSync('/usr/bin/systemd-analyze') && 'no systemd-analyze' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const publicKey = keyPair();
  const cloud = await fakeCloud(t, { publicKey });
  const root = path.join(dir, 'root');
  const c = capture();
  t.equal(await main(['device', 'install', '--root', root, '--server-url', cloud.url, '--licence-key', KEY,
    '--public-key-sha256', publicKeySha256(publicKey), '--camera', 'none'], c.io), 0, c.err.join('\n'));
  // verify checks that ExecStart's program exists and is executable.
  const binary = path.join(root, 'usr', 'local', 'bin', 'face-check');
  fs.mkdirSync(path.dirname(binary), { recursive: true });
  fs.writeFileSync(binary, '#!/bin/sh\n', { mode: 0o755 });
  const unit = path.join(root, 'etc', 'systemd', 'system', 'face-check.service');
  const r = await execFileAsync('systemd-analyze', ['verify', unit]).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, output: e.stdout + e.stderr }));
  t.equal(r.code, 0, r.output);
  t.notMatch(r.output, /face-check\.service/, `no finding on the unit: ${r.output}`);

  // The check is real: the same unit without its program fails.
  fs.rmSync(binary);
  const missing = await execFileAsync('systemd-analyze', ['verify', unit]).then(() => 0, (e: { code: number }) => e.code);
  t.not(missing, 0);
});

t.test("publicUrl: [licensing] public_url, else [auth] public_base_url, else the listening address", async (t) => {
  const config = defaultConfig();
  config.server.host = '127.0.0.1';
  config.server.port = 0;
  t.equal(publicUrl(config, 41234), 'http://127.0.0.1:41234', 'port 0 is named by the port listened on');
  config.server.port = 8080;
  t.equal(publicUrl(config, 41234), 'http://127.0.0.1:8080');
  config.server.host = '::1';
  t.equal(publicUrl(config), 'http://[::1]:8080');
  config.auth.public_base_url = 'https://faces.example.com';
  t.equal(publicUrl(config), 'https://faces.example.com');
  config.licensing.public_url = 'https://licences.example.com/fc';
  t.equal(publicUrl(config), 'https://licences.example.com/fc');
});
