// The installation command on a board without a toolchain: the real generated command, run with sh into a
// temporary root, against a local cloud serving the package with its prebuilds, with a PATH holding only the
// tools the command needs and, in place of every compiler, make, cmake and python, a stand-in that records
// being called and fails. It installs, the installed addon and engine load, and nothing was compiled (nor
// tried). A board of another architecture, with too old a Node or without curl is refused before anything
// is downloaded or written, every finding named. And the package's install step itself: on an installed
// package it never builds (it fails naming the platform instead), in a source checkout it still does.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { defaultConfig } from '../../src/config/load';
import { missingPlatforms, programPrebuilds } from '../../src/install/device-prebuilds';
import { installCommand } from '../../src/install/install-command';
import { publicKeySha256 } from '../../src/licensing/licence-document';
import { PackageFile } from '../../src/install/package-file';
import { packageRoot } from '../../src/package-root';
import { packageWithThisAddon } from '../helpers/served-package';
import { board, runOnBoard, type Board } from '../helpers/toolchain-free-board';

const repoRoot = packageRoot();
const KEY = `fcl_${'Bd4_-y'.repeat(5)}Qq`;
const NODE_MINIMUM = '20.9.0';

/** The cloud's two routes the command and device install use, and what it was asked. */
async function cloud(t: Test, packageBytes: Buffer) {
  const publicKey = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/licence/v1/package' && req.headers['licence-key'] === KEY) {
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(packageBytes);
    } else if (req.url === '/licence/v1/public-key') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ publicKey, sha256: publicKeySha256(publicKey) }));
    } else {
      res.writeHead(401).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const command = installCommand({
    serverUrl: url, licenceKey: KEY, packageSha256: crypto.createHash('sha256').update(packageBytes).digest('hex'),
    publicKeySha256: publicKeySha256(publicKey), nodeMinimum: NODE_MINIMUM,
  });
  return { url, seen, command };
}

/**
 * The package as the cloud serves it (PackageFile: npm pack of this checkout, checked for both prebuilds)
 * once `npm run prebuild` has run, as CI does. A checkout set up with `npm ci` alone has only its local
 * build: the cloud would refuse to serve it, so the test packs it with that build as this platform's
 * prebuild instead (the arm64 one is not needed on this machine).
 */
async function servedPackage(t: Test, dir: string): Promise<Buffer> {
  if (missingPlatforms(programPrebuilds(repoRoot)).length === 0) {
    const config = defaultConfig(dir);
    config.storage.path = path.join(dir, 'cloud-store');
    return fs.readFileSync((await new PackageFile(config).get()).path);
  }
  t.comment('no prebuilds in this checkout (npm run prebuild): serving its local build as this platform\'s prebuild');
  return fs.readFileSync((await packageWithThisAddon(dir))!);
}

const x64 = process.platform === 'linux' && process.arch === 'x64';

t.test('the command installs on a board without compilers: the prebuilt addon loads and nothing was compiled',
  { skip: !x64 && 'the installed addon is loaded here: an x64 Linux machine' }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-board-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const packageBytes = await servedPackage(t, dir);
  const { command, seen } = await cloud(t, packageBytes);
  const b = board(dir);
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);

  const r = await runOnBoard(command, b, dir, root);
  t.equal(r.code, 0, r.code === 0 ? 'the command succeeds' : `the command failed:\n${r.stderr.slice(-3000)}`);
  t.same(b.calls(), [], 'no compiler, make, cmake or python was called');
  t.same(seen, ['/licence/v1/package', '/licence/v1/public-key']);
  const output = r.stdout + r.stderr;
  t.notMatch(output, /gyp|cmake-js|g\+\+|allow-scripts|allowScripts/, 'no build, and no npm notice about unreviewed install scripts');

  const modules = path.join(root, 'usr', 'local', 'lib', 'node_modules');
  const pkg = path.join(modules, 'face-check');
  for (const built of [pkg, path.join(modules, 'face-check', 'node_modules', 'lmdb'), path.join(pkg, 'node_modules', 'msgpackr-extract')]) {
    t.notOk(fs.existsSync(path.join(built, 'build')), `no build folder in ${path.relative(root, built)}`);
  }
  t.ok(fs.existsSync(path.join(root, 'etc', 'face-check', 'face-check.ini')), 'device install wrote the ini');

  // The installed program as the service runs it: its prebuilt addon, ONNX Runtime and the models.
  const script = `
    const dir = ${JSON.stringify(pkg)};
    const addon = require(require.resolve('node-gyp-build', { paths: [dir] })).path(dir);
    const { createEngine } = require(dir + '/dist/src/engine');
    (async () => {
      const engine = await createEngine();
      const faces = await engine.analyze({ data: new Uint8Array(64 * 48 * 3).fill(90), width: 64, height: 48 });
      await engine.close();
      console.log(JSON.stringify({ addon, faces: faces.length }));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8', env: { PATH: b.bin, HOME: os.homedir() } }).trim());
  t.equal(loaded.addon, path.join(pkg, 'prebuilds', 'linux-x64', 'face-check.node'), 'the addon is the linux-x64 prebuild');
  t.equal(loaded.faces, 0, 'the engine loaded its models and analysed an image');
  t.same(b.calls(), [], 'still nothing compiled');
  t.comment(`package ${(packageBytes.length / 1e6).toFixed(1)} MB, installed in ${r.seconds.toFixed(0)} s without a toolchain`);
});

t.test('a board of another architecture, too old a Node or without curl is refused before anything is written', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-board-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { command, seen } = await cloud(t, Buffer.from('never downloaded'));
  const b = board(dir, { machine: 'armv7l', nodeVersion: '18.19.0', omit: ['curl'] });
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const r = await runOnBoard(command, b, dir, root);
  t.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n');
  t.same(lines, [
    'face-check: this board is Linux armv7l: face-check runs on Linux on x86_64 or aarch64',
    'face-check: curl is missing (install curl, coreutils, and Node.js with npm)',
    `face-check: Node.js 18.19.0 is too old: face-check needs ${NODE_MINIMUM} or later`,
    'face-check: nothing was installed or changed',
  ], 'every finding named, then nothing done');
  t.same(seen, [], 'nothing downloaded');
  t.same(fs.readdirSync(root), [], 'nothing under the install root');
  t.same(fs.readdirSync(r.tmp), [], 'no temporary folder');
  t.same(b.calls(), []);

  const noNode = board(path.join(dir, 'no-node'), { omit: ['node'] });
  fs.mkdirSync(path.join(dir, 'no-node', 'root'));
  const without = await runOnBoard(command, noNode, path.join(dir, 'no-node'), path.join(dir, 'no-node', 'root'));
  t.equal(without.code, 1);
  t.match(without.stderr, `face-check: Node.js ${NODE_MINIMUM} or later is missing`);
});

t.test('the Node check compares versions field by field with the package\'s engines.node', async (t) => {
  // A package whose sha256 differs: a board that passes the checks gets as far as the download, and stops there.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-board-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const served = Buffer.from('a package that is not the one named');
  const { url } = await cloud(t, served);
  const command = installCommand({
    serverUrl: url, licenceKey: KEY, packageSha256: 'a'.repeat(64), publicKeySha256: 'b'.repeat(64), nodeMinimum: NODE_MINIMUM,
  });
  const cases: [string, boolean][] = [['20.9.0', true], ['20.10.0', true], ['20.9.1', true], ['21.0.0', true], ['100.0.0', true],
    ['20.8.99', false], ['19.20.0', false], ['9.10.0', false], ['2.0.0', false]];
  for (const [version, accepted] of cases) {
    const caseDir = path.join(dir, version);
    fs.mkdirSync(path.join(caseDir, 'root'), { recursive: true });
    const r = await runOnBoard(command, board(caseDir, { nodeVersion: version }), caseDir, path.join(caseDir, 'root'));
    t.equal(r.code, 1, version);
    if (accepted) t.match(r.stderr, /sha256 differs/, `${version} passes the check`);
    else t.match(r.stderr, `Node.js ${version} is too old`, `${version} is refused`);
  }
  const machines: [string, boolean][] = [['x86_64', true], ['aarch64', true], ['armv7l', false], ['i686', false], ['riscv64', false]];
  for (const [machine, accepted] of machines) {
    const caseDir = path.join(dir, machine);
    fs.mkdirSync(path.join(caseDir, 'root'), { recursive: true });
    const r = await runOnBoard(command, board(caseDir, { machine }), caseDir, path.join(caseDir, 'root'));
    if (accepted) t.match(r.stderr, /sha256 differs/, `${machine} passes the check`);
    else t.match(r.stderr, `this board is Linux ${machine}`, `${machine} is refused`);
  }
});

/** A copy of the installed package's layout: scripts, manifest, the models and dependencies linked. */
function installedLayout(dir: string, opts: { sources?: boolean } = {}): string {
  const pkg = path.join(dir, 'face-check');
  fs.mkdirSync(pkg);
  fs.cpSync(path.join(repoRoot, 'scripts'), path.join(pkg, 'scripts'), { recursive: true });
  fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(pkg, 'package.json'));
  for (const linked of ['models', 'node_modules', ...(opts.sources ? ['src', 'native', 'CMakeLists.txt', 'binding.gyp'] : [])]) {
    fs.symlinkSync(path.join(repoRoot, linked), path.join(pkg, linked));
  }
  return pkg;
}

function installStep(pkg: string, b: Board) {
  try {
    execFileSync(process.execPath, [path.join(pkg, 'scripts', 'install.js')], {
      cwd: pkg, env: { PATH: b.bin, HOME: os.homedir(), ...(process.env.FACE_CHECK_CACHE ? { FACE_CHECK_CACHE: process.env.FACE_CHECK_CACHE } : {}) },
      stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8',
    });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { status: number; stderr: string };
    return { code: e.status, stderr: e.stderr };
  }
}

t.test('the install step of an installed package never builds: no fitting prebuild is a clear failure', { skip: !x64 && 'x64 Linux' }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-step-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const b = board(dir);
  const pkg = installedLayout(dir);

  // Only another platform's prebuild.
  fs.mkdirSync(path.join(pkg, 'prebuilds', 'linux-arm64'), { recursive: true });
  fs.writeFileSync(path.join(pkg, 'prebuilds', 'linux-arm64', 'face-check.node'), 'an arm64 addon');
  const none = installStep(pkg, b);
  t.equal(none.code, 1);
  t.match(none.stderr, 'cannot install this package: it carries no prebuilt addon for linux-x64 (only for linux-arm64)');
  t.match(none.stderr, 'Nothing was compiled');
  t.match(none.stderr, 'FACE_CHECK_FORCE_BUILD=1');

  // This platform's prebuild, but one that does not load (another C library, a damaged file).
  fs.mkdirSync(path.join(pkg, 'prebuilds', 'linux-x64'));
  fs.writeFileSync(path.join(pkg, 'prebuilds', 'linux-x64', 'face-check.node'), 'not an addon');
  const broken = installStep(pkg, b);
  t.equal(broken.code, 1);
  t.match(broken.stderr, 'its prebuilt addon for linux-x64 does not load here');
  t.same(b.calls(), [], 'no compiler, make, cmake or python was called');
  t.notOk(fs.existsSync(path.join(pkg, 'build')), 'no build folder');

  // The real prebuild (or this checkout's build in its place): it loads, the step succeeds.
  const addon = fs.existsSync(path.join(repoRoot, 'prebuilds', 'linux-x64', 'face-check.node'))
    ? path.join(repoRoot, 'prebuilds', 'linux-x64', 'face-check.node') : path.join(repoRoot, 'build', 'Release', 'face_check.node');
  fs.copyFileSync(addon, path.join(pkg, 'prebuilds', 'linux-x64', 'face-check.node'));
  t.same(installStep(pkg, b), { code: 0, stderr: '' });
  t.same(b.calls(), []);
});

t.test('in a source checkout (npm ci) the install step still builds when no prebuild loads', { skip: !x64 && 'x64 Linux' }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-step-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const b = board(dir);
  const pkg = installedLayout(dir, { sources: true });
  const r = installStep(pkg, b);
  // The stand-in cmake fails the build; that the build was tried is what this shows.
  t.not(r.code, 0);
  t.match(b.calls().join('\n'), /^cmake /m, 'cmake-js started the build');
});
