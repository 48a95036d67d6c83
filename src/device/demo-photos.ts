// The synthetic camera's default photos: the six demo photos of an npm package, fetched with `npm pack`
// into the cache on first use (never committed). Fetched here rather than through scripts/npm-tarball.js:
// scripts/ holds install and test helpers, and the running service must not depend on them. The cache
// layout (tarball name, face-api-demo/) is the same, so photos fetched by the tests are reused.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { cacheDir } from './cache-dir';

export const DEMO_PHOTO_PACKAGE = '@vladmandic/face-api@1.7.15';
const DEMO_ENTRIES = [1, 2, 3, 4, 5, 6].map((i) => `package/demo/sample${i}.jpg`);

/** The cached tarball of `spec` (name@version), downloaded once. */
function packTarball(spec: string): string {
  const dir = cacheDir();
  const target = path.join(dir, `${spec.replace(/^@/, '').replace(/[/@]/g, '-')}.tgz`);
  if (fs.existsSync(target)) return target;
  const tmp = fs.mkdtempSync(path.join(dir, 'pack-'));
  try {
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', tmp], {
      encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
    }).trim().split('\n').pop()!;
    fs.renameSync(path.join(tmp, out), target);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return target;
}

const demoPhotoFiles = () => DEMO_ENTRIES.map((e) => path.join(cacheDir(), 'face-api-demo', path.basename(e)));

/** Paths of the demo photos when an earlier use left them in the cache, else undefined (nothing is fetched). */
export function cachedDemoPhotoPaths(): string[] | undefined {
  const files = demoPhotoFiles();
  return files.every((f) => fs.existsSync(f)) ? files : undefined;
}

/** Paths of the demo photos, fetched into the cache on first use. */
export function demoPhotoPaths(): string[] {
  const cached = cachedDemoPhotoPaths();
  if (cached) return cached;
  const files = demoPhotoFiles();
  const dir = path.dirname(files[0]);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-x-'));
  try {
    execFileSync('tar', ['-xzf', packTarball(DEMO_PHOTO_PACKAGE), '-C', tmp, ...DEMO_ENTRIES], { stdio: 'inherit' });
    fs.mkdirSync(dir, { recursive: true });
    DEMO_ENTRIES.forEach((entry, i) => fs.copyFileSync(path.join(tmp, entry), files[i]));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return files;
}
