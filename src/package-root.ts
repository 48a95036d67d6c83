// The package's root folder, found from this file whether it runs as src/*.ts (tests) or dist/src/*.js.
import fs from 'node:fs';
import path from 'node:path';

let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, 'utf8')).name === 'face-check') {
      cached = dir;
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`face-check package root not found above ${__dirname}`);
    dir = parent;
  }
}
