// Sealing a plain store rewrites every value and rotating the key re-wraps the data key, but LMDB is
// copy-on-write: the pages that held the plain values (or the data key wrapped by the old key) are only
// freed, and stay in data.mdb until reused. So after either the store is replaced by a compacted copy (live
// pages only) and the old file is overwritten before it is dropped. This needs the store to itself: with
// another process reading it, the compaction waits for a later open (meta "compact-pending").
import fs from 'node:fs';
import path from 'node:path';
import type { RootDatabase } from 'lmdb';

import { COMPACT_PENDING } from '../crypto/data-key';
import { lmdb } from './load';
import { syncFolder } from '../crypto/key-file';

/** No other live process has the environment open (its reader table lists only this process). */
export function soleUser(root: RootDatabase): boolean {
  const pids = root.readerList().split('\n').slice(1)
    .map((line) => Number(line.trim().split(/\s+/)[0])).filter((pid) => Number.isInteger(pid) && pid > 0);
  return pids.every((pid) => pid === process.pid || !alive(pid));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Replaces dir/data.mdb with a compacted copy and overwrites the old file's bytes; closes `root`. */
export async function replaceWithCompactCopy(root: RootDatabase, dir: string): Promise<void> {
  const temp = fs.mkdtempSync(path.join(dir, '.compact-'));  // same filesystem: the rename is atomic
  try {
    await root.backup(temp, true);
    await root.close();
    const copy = lmdb.open({ path: temp, compression: false });
    await copy.openDB<unknown, string>({ name: 'meta' }).remove(COMPACT_PENDING);
    await copy.close();
    const file = path.join(dir, 'data.mdb');
    const old = fs.openSync(file, 'r+');
    try {
      fs.chmodSync(path.join(temp, 'data.mdb'), 0o600);
      fs.renameSync(path.join(temp, 'data.mdb'), file);
      syncFolder(dir);
      overwrite(old);
    } finally {
      fs.closeSync(old);
    }
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
}

/** Zeros a file in place (on copy-on-write filesystems and SSDs the old blocks may survive elsewhere). */
function overwrite(fd: number): void {
  const size = fs.fstatSync(fd).size;
  const zeros = Buffer.alloc(Math.min(size, 1 << 20));
  for (let at = 0; at < size; at += zeros.length) fs.writeSync(fd, zeros, 0, Math.min(zeros.length, size - at), at);
  fs.fsyncSync(fd);
}

