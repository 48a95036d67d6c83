// The error catalog for tests (the one table, as in production), and the native statuses read from
// native/core/status.h so the table's coverage is checked before the addon is built.
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCatalog } from '../../src/errors';

export const repoRoot = path.resolve(__dirname, '..', '..');
export const statusHeader = path.join(repoRoot, 'native', 'core', 'status.h');

/** The names in the X-macro of status.h, in enum order. */
export function parseStatusHeader(text: string = fs.readFileSync(statusHeader, 'utf8')): string[] {
  const macro = /#define FACE_CHECK_STATUSES\(X\)((?:.*\\\n)*.*)/.exec(text);
  if (!macro) throw new Error('status.h: no FACE_CHECK_STATUSES macro');
  return [...macro[1].matchAll(/X\((\w+)\)/g)].map((m) => m[1]);
}

export function testErrorCatalog(): ErrorCatalog {
  return new ErrorCatalog();
}
