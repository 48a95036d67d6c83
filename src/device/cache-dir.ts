// The face-check cache folder (FACE_CHECK_CACHE, else ~/.cache/face-check): fetched photos and converted
// recordings live there, never in the package. scripts/npm-tarball.js uses the same folder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function cacheDir(): string {
  const dir = process.env.FACE_CHECK_CACHE || path.join(os.homedir(), '.cache', 'face-check');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}
