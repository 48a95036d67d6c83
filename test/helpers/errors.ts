// The error table for tests: from the built addon when it loads (as in production), else parsed from
// native/core/error_table.h (the same rows) so API tests run before the addon is built.
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCatalog } from '../../src/errors';
import type { NativeErrorRow } from '../../src/native';

export const repoRoot = path.resolve(__dirname, '..', '..');
export const errorHeader = path.join(repoRoot, 'native', 'core', 'error_table.h');

/** Rows of the X-macro in error_table.h, numbered like the native enum. */
export function parseErrorHeader(file: string = errorHeader): NativeErrorRow[] {
  const text = fs.readFileSync(file, 'utf8');
  const rows: NativeErrorRow[] = [];
  const re = /X\((\w+),\s*"([^"]*)",\s*(\d+),\s*"([^"]*)"\)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    rows.push({ status: rows.length, name: m[1], code: m[2], http: Number(m[3]), message: m[4] });
  }
  return rows;
}

let source: 'addon' | 'header' | undefined;

export function nativeTable(): NativeErrorRow[] | undefined {
  try {
    // Required here, not imported: without a built addon the tests fall back to the header's rows.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('../../src/native') as typeof import('../../src/native')).nativeErrorTable();
  } catch {
    return undefined;
  }
}

export function testErrorCatalog(): ErrorCatalog {
  const native = nativeTable();
  source = native ? 'addon' : 'header';
  return new ErrorCatalog(native ?? parseErrorHeader());
}

export function errorTableSource(): string | undefined {
  return source;
}
