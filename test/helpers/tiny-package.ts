// A minimal npm package (a folder with package.json and one file) and its tarball in npm pack's layout,
// so package serving and packing are tested in seconds instead of packing the whole program. Both carry,
// unless told otherwise, a stand-in addon per board platform: an ELF header naming the platform's machine
// (what the cloud checks before it serves a package; nothing here loads them).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface TinyPrebuild {
  platform: string;
  /** ELF e_machine: 62 x86-64, 183 aarch64. */
  machine: number;
}

export const BOARD_PREBUILDS: TinyPrebuild[] = [{ platform: 'linux-x64', machine: 62 }, { platform: 'linux-arm64', machine: 183 }];

interface TinyManifest {
  name?: string;
  version?: string;
  prebuilds?: TinyPrebuild[];
  /** engines.node; default >=20.9. */
  node?: string | null;
}

/** The first bytes of a little-endian ELF shared object for `machine`. */
export function elfHeader(machine: number): Buffer {
  const head = Buffer.alloc(64);
  head.write('\x7fELF', 0, 'latin1');
  head[4] = 2; // 64-bit
  head[5] = 1; // little-endian
  head[6] = 1;
  head.writeUInt16LE(3, 16); // ET_DYN
  head.writeUInt16LE(machine, 18);
  return head;
}

function writePrebuilds(packageDir: string, prebuilds: TinyPrebuild[]): void {
  for (const p of prebuilds) {
    fs.mkdirSync(path.join(packageDir, 'prebuilds', p.platform), { recursive: true });
    fs.writeFileSync(path.join(packageDir, 'prebuilds', p.platform, 'face-check.node'), elfHeader(p.machine));
  }
}

function engines(manifest: TinyManifest) {
  return manifest.node === null ? {} : { engines: { node: manifest.node ?? '>=20.9' } };
}

/** A package folder under `dir`; its prepack script appends a line to `<dir>/packs.log` on every npm pack. */
export function writeTinyPackage(dir: string, manifest: TinyManifest = {}): string {
  const root = path.join(dir, 'tiny');
  fs.mkdirSync(root, { recursive: true });
  const log = path.join(dir, 'packs.log');
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({
    name: manifest.name ?? 'face-check',
    version: manifest.version ?? '9.8.7',
    ...engines(manifest),
    files: ['index.js', 'prebuilds/'],
    scripts: { prepack: 'node count-pack.js' },
  }, null, 2));
  writePrebuilds(root, manifest.prebuilds ?? BOARD_PREBUILDS);
  fs.writeFileSync(path.join(root, 'count-pack.js'), `require('fs').appendFileSync(${JSON.stringify(log)}, 'packed\\n');\n`);
  fs.writeFileSync(path.join(root, 'index.js'), 'module.exports = 42;\n');
  return root;
}

/** How many times npm pack ran the tiny package's prepack script. */
export function packCount(dir: string): number {
  const log = path.join(dir, 'packs.log');
  return fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** A tarball holding package/package.json (and package/index.js), made with tar as npm lays it out. */
export function writeTinyTarball(dir: string, manifest: TinyManifest = {}): string {
  const work = fs.mkdtempSync(path.join(dir, 'tarball-'));
  fs.mkdirSync(path.join(work, 'package'));
  fs.writeFileSync(path.join(work, 'package', 'package.json'),
    JSON.stringify({ name: manifest.name ?? 'face-check', version: manifest.version ?? '9.8.7', ...engines(manifest) }));
  writePrebuilds(path.join(work, 'package'), manifest.prebuilds ?? BOARD_PREBUILDS);
  fs.writeFileSync(path.join(work, 'package', 'index.js'), 'module.exports = 42;\n');
  const file = path.join(dir, `tiny-${path.basename(work)}.tgz`);
  execFileSync('tar', ['-czf', file, '-C', work, 'package']);
  return file;
}
