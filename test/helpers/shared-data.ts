// ../shared/data (real face photos, never committed): tests that need it skip clearly when it is absent.
import fs from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../../src/package-root';

export const sharedData: string | null = (() => {
  const dir = process.env.FACE_CHECK_DATA ?? path.resolve(packageRoot(), '..', 'shared', 'data');
  return fs.existsSync(dir) ? dir : null;
})();

/** tap options that skip a test, with the reason, when ../shared/data is absent. */
export const needsSharedData = sharedData ? {} : { skip: '../shared/data is absent (real photos not available here)' };

export function dataPath(...parts: string[]): string {
  if (!sharedData) throw new Error('shared data absent');
  return path.join(sharedData, ...parts);
}

/** Rows of quality/index.csv: condition, path (relative to quality/), note. */
export function qualityIndex(): { condition: string; path: string; note: string }[] {
  const text = fs.readFileSync(dataPath('quality', 'index.csv'), 'utf8').trim().split('\n').slice(1);
  return text.map((line) => {
    const [condition, file, ...note] = line.split(',');
    return { condition, path: file, note: note.join(',') };
  });
}
