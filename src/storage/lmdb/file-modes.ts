// Only the service's user may read the store: folder 0700, files 0600. lmdb-js creates its files with the
// process umask (0644 usually), so the folder is made private before LMDB creates anything in it, and the
// files are tightened after open; stores made by earlier versions are tightened the same way at start.
import fs from 'node:fs';
import path from 'node:path';

/** Creates the folder if missing and makes it 0700 (before LMDB puts files in it). */
export function privateFolder(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodIfLooser(dir, 0o700);
}

/** Makes every file directly in the folder 0600 (data.mdb, lock.mdb, the default key file). */
export function privateFiles(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isFile()) chmodIfLooser(path.join(dir, entry.name), 0o600);
  }
}

function chmodIfLooser(file: string, mode: number): void {
  const current = fs.statSync(file).mode & 0o777;
  if ((current & ~mode) !== 0) fs.chmodSync(file, current & mode);
}
