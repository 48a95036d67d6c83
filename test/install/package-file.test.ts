// The package the cloud serves to devices: packed with the real npm once per version (concurrent first
// calls share one pack, a restart reuses the file), its sha256 that of the bytes on disk, a configured
// [licensing] package_file served instead of packing, and clear failures. A package without the prebuilt
// addon of every board platform (linux-x64, linux-arm64, each built for its machine) is never served.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import { PackageFile, PackagePrebuildsMissing } from '../../src/install/package-file';
import { readPackageContents, readPackageManifest } from '../../src/install/package-manifest';
import { packageRoot } from '../../src/package-root';
import { tempDir } from '../helpers/app';
import { missingPlatforms, programPrebuilds } from '../../src/install/device-prebuilds';
import { packCount, writeTinyPackage, writeTinyTarball } from '../helpers/tiny-package';

function configIn(dir: string): Config {
  const config = defaultConfig(dir);
  config.storage.path = path.join(dir, 'store');
  return config;
}

function sha256Of(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

t.test('packs once per version: concurrent calls share one pack, later calls and a restart reuse it', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = writeTinyPackage(dir, { version: '9.8.7' });
  const config = configIn(dir);
  const packages = new PackageFile(config, { root });

  const [a, b] = await Promise.all([packages.get(), packages.get()]);
  t.equal(packCount(dir), 1, 'one npm pack for two concurrent calls');
  t.same(a, b);
  t.equal(a.path, path.join(config.storage.path, 'packages', 'face-check-9.8.7.tgz'));
  t.equal(a.version, '9.8.7');
  t.equal(a.sha256, sha256Of(a.path), 'sha256 of the bytes on disk');
  t.equal(a.size, fs.statSync(a.path).size);
  t.same(await readPackageManifest(a.path), { name: 'face-check', version: '9.8.7' }, 'an npm tarball of the package');
  t.same(fs.readdirSync(path.dirname(a.path)), ['face-check-9.8.7.tgz'], 'no temporary folder left behind');

  t.same(await packages.get(), a);
  t.same(await new PackageFile(config, { root }).get(), a, 'a restarted cloud serves the same file');
  t.equal(packCount(dir), 1, 'no second pack');

  fs.rmSync(a.path);
  const again = await packages.get();
  t.equal(packCount(dir), 2, 'a removed file is packed again');
  t.equal(again.sha256, sha256Of(again.path));
});

t.test('a new version is packed into its own file', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = configIn(dir);
  await new PackageFile(config, { root: writeTinyPackage(dir, { version: '1.0.0' }) }).get();
  const next = await new PackageFile(config, { root: writeTinyPackage(dir, { version: '1.0.1' }) }).get();
  t.equal(packCount(dir), 2);
  t.equal(path.basename(next.path), 'face-check-1.0.1.tgz');
  t.same(fs.readdirSync(path.dirname(next.path)).sort(), ['face-check-1.0.0.tgz', 'face-check-1.0.1.tgz']);
});

t.test('[licensing] package_file is served as it is, without npm', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = configIn(dir);
  config.licensing.package_file = writeTinyTarball(dir, { version: '3.2.1' });
  const info = await new PackageFile(config, { npm: path.join(dir, 'no-npm-here') }).get();
  t.same(info, {
    path: config.licensing.package_file,
    sha256: sha256Of(config.licensing.package_file),
    version: '3.2.1',
    size: fs.statSync(config.licensing.package_file).size,
    nodeMinimum: '20.9.0',
  });
  t.notOk(fs.existsSync(path.join(config.storage.path, 'packages')), 'nothing packed');
});

t.test('a package file replaced under a running cloud is hashed again, never served with the old sha256', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = configIn(dir);
  config.licensing.package_file = path.join(dir, 'served.tgz');
  fs.copyFileSync(writeTinyTarball(dir, { version: '1.0.0' }), config.licensing.package_file);
  const packages = new PackageFile(config);
  const first = await packages.get();
  t.equal(first.version, '1.0.0');
  // Replaced the way a deployment does it: a new file renamed over the old one.
  const next = writeTinyTarball(dir, { version: '1.0.1' });
  fs.renameSync(next, config.licensing.package_file);
  const second = await packages.get();
  t.equal(second.version, '1.0.1');
  t.equal(second.sha256, sha256Of(config.licensing.package_file));
  t.not(second.sha256, first.sha256);
  t.equal(second.size, fs.statSync(config.licensing.package_file).size);
});

t.test('refuses a package_file that is not face-check, and one that is no tarball', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = configIn(dir);
  config.licensing.package_file = writeTinyTarball(dir, { name: 'left-pad' });
  await t.rejects(new PackageFile(config).get(), /\[licensing\] package_file: .* is the package "left-pad", not face-check/);
  config.licensing.package_file = path.join(dir, 'plain.txt');
  fs.writeFileSync(config.licensing.package_file, 'not a tarball');
  await t.rejects(new PackageFile(config).get(), /\[licensing\] package_file: .* is not a gzip'd npm package/);
});

t.test('without npm the error names [licensing] package_file, and a later call tries again', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = writeTinyPackage(dir);
  const missing = new PackageFile(configIn(dir), { root, npm: path.join(dir, 'no-npm-here') });
  await t.rejects(missing.get(), /no-npm-here was not found.*\[licensing\] package_file/);
  await t.rejects(missing.get(), /was not found/, 'the failure is not cached as a result');
  t.equal(packCount(dir), 0);
  // A failing pack leaves no file that a restart would take for the package.
  t.same(fs.readdirSync(path.join(dir, 'store', 'packages')), []);
});

t.test('a program without its prebuilds is not packed: the error names what is missing and how to make it', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = writeTinyPackage(dir, { prebuilds: [] });
  const packages = new PackageFile(configIn(dir), { root });
  const err = await packages.get().catch((e: unknown) => e);
  t.ok(err instanceof PackagePrebuildsMissing);
  const missing = err as PackagePrebuildsMissing;
  t.same(missing.missing, ['linux-x64', 'linux-arm64']);
  t.match(missing.message, /lacks the prebuilt addon for linux-x64 and linux-arm64, so installing it would compile the addon on the board/);
  t.match(missing.message, `run \`npm run prebuild\` in ${root}`);
  t.match(missing.message, /apt-get install g\+\+-aarch64-linux-gnu/);
  t.notMatch(missing.publicReason, root, 'the text for devices and operators names no path');
  t.equal(packCount(dir), 0, 'npm pack never ran');
  t.same((await packages.check())?.missing, ['linux-x64', 'linux-arm64'], 'the start check says the same without packing');

  // A prebuild of the wrong machine in a platform's folder is no prebuild for it.
  const wrong = writeTinyPackage(path.join(dir, 'wrong'), { prebuilds: [{ platform: 'linux-x64', machine: 62 }, { platform: 'linux-arm64', machine: 62 }] });
  await t.rejects(new PackageFile(configIn(dir), { root: wrong }).get(), /lacks the prebuilt addon for linux-arm64,/);
});

t.test('prebuilds made after a first failure are packed at the next call, and an earlier pack without them is replaced', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = writeTinyPackage(dir, { prebuilds: [{ platform: 'linux-x64', machine: 62 }] });
  const config = configIn(dir);
  // A pack of this version from before (an older cloud packed without checking).
  const stale = path.join(config.storage.path, 'packages', 'face-check-9.8.7.tgz');
  fs.mkdirSync(path.dirname(stale), { recursive: true });
  fs.copyFileSync(writeTinyTarball(dir, { prebuilds: [] }), stale);
  const packages = new PackageFile(config, { root });
  await t.rejects(packages.get(), PackagePrebuildsMissing);
  // The operator runs npm run prebuild: the arm64 addon appears.
  writeTinyPackage(dir, { prebuilds: [{ platform: 'linux-arm64', machine: 183 }] });
  const info = await packages.get();
  t.equal(info.path, stale);
  t.same(missingPlatforms((await readPackageContents(info.path)).prebuilds), [], 'the new pack carries both');
  t.equal(info.nodeMinimum, '20.9.0', 'engines.node >=20.9');
});

t.test('a package_file without both prebuilds, or without a Node range the command can check, is refused', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = configIn(dir);
  config.licensing.package_file = writeTinyTarball(dir, { prebuilds: [{ platform: 'linux-arm64', machine: 183 }] });
  const err = await new PackageFile(config).get().catch((e: unknown) => e) as PackagePrebuildsMissing;
  t.ok(err instanceof PackagePrebuildsMissing);
  t.same(err.missing, ['linux-x64']);
  t.match(err.message, `replace [licensing] package_file (${config.licensing.package_file}) with a package made by \`npm run prebuild\``);
  t.same((await new PackageFile(config).check())?.missing, ['linux-x64']);
  config.licensing.package_file = writeTinyTarball(dir, { node: '^20.9.0 || ^22' });
  await t.rejects(new PackageFile(config).get(), /engines\.node "\^20\.9\.0 \|\| \^22" is not of the form ">=major\[\.minor\[\.patch\]\]"/);
});

t.test('packs the real program when it has its prebuilds (npm run prebuild), else says what to run', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const missing = missingPlatforms(programPrebuilds(packageRoot()));
  if (missing.length) {
    // A checkout set up with `npm ci` only (CI runs npm run prebuild first).
    await t.rejects(new PackageFile(configIn(dir)).get(), new RegExp(`lacks the prebuilt addon for ${missing.join(' and ')}.*npm run prebuild`));
    return;
  }
  const info = await new PackageFile(configIn(dir)).get();
  const version = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')).version;
  t.equal(info.version, version);
  t.same(await readPackageManifest(info.path), { name: 'face-check', version });
  t.equal(info.sha256, sha256Of(info.path));
  t.equal(info.nodeMinimum, '20.9.0');
});
