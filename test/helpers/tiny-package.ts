// A minimal npm package (a folder with package.json and one file) and its tarball in npm pack's layout,
// so package serving and packing are tested in seconds instead of packing the whole program.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A package folder under `dir`; its prepack script appends a line to `<dir>/packs.log` on every npm pack. */
export function writeTinyPackage(dir: string, manifest: { name?: string; version?: string } = {}): string {
  const root = path.join(dir, 'tiny');
  fs.mkdirSync(root, { recursive: true });
  const log = path.join(dir, 'packs.log');
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({
    name: manifest.name ?? 'face-check',
    version: manifest.version ?? '9.8.7',
    files: ['index.js'],
    scripts: { prepack: 'node count-pack.js' },
  }, null, 2));
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
export function writeTinyTarball(dir: string, manifest: { name?: string; version?: string } = {}): string {
  const work = fs.mkdtempSync(path.join(dir, 'tarball-'));
  fs.mkdirSync(path.join(work, 'package'));
  fs.writeFileSync(path.join(work, 'package', 'package.json'),
    JSON.stringify({ name: manifest.name ?? 'face-check', version: manifest.version ?? '9.8.7' }));
  fs.writeFileSync(path.join(work, 'package', 'index.js'), 'module.exports = 42;\n');
  const file = path.join(dir, `tiny-${path.basename(work)}.tgz`);
  execFileSync('tar', ['-czf', file, '-C', work, 'package']);
  return file;
}
