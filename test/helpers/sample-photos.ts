// Photos every test can use anywhere: the six group photos shipped in @vladmandic/face-api@1.7.15's demo/,
// fetched from the npm registry at test time into the cache (never committed).
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packTarball, extractEntries, cacheDir } = require('../../scripts/npm-tarball');

export const FACE_API_PACKAGE = '@vladmandic/face-api@1.7.15';

/** Paths of demo/sample1.jpg .. sample6.jpg. */
export function samplePhotos(): string[] {
  const entries = [1, 2, 3, 4, 5, 6].map((i) => `package/demo/sample${i}.jpg`);
  const dir = path.join(cacheDir(), 'face-api-demo');
  return extractEntries(packTarball(FACE_API_PACKAGE), entries, dir);
}
