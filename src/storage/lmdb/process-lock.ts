// Which process holds a store. LMDB lets several processes open one environment, but a running service keeps
// its galleries in memory: a `face-check reindex` beside it would rewrite templates the service never
// reloads. The service and commands that rewrite persons take this lock; one that finds it held by a live
// process refuses with a message naming it. A lock left by a killed process (its pid gone) is taken over.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type LockOwner, StoreBusyError } from '../errors';

export interface StoreLock {
  readonly file: string;
  release(): void;
}

const LOCK_FILE = 'face-check.lock';

/** Takes the store's lock for `role` or throws StoreBusyError (the folder is created when absent). */
export function lockStore(dir: string, role: string): StoreLock {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, role, since: new Date().toISOString(), host: os.hostname() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, JSON.stringify(me));
      fs.closeSync(fd);
      return {
        file,
        release: () => {
          if (readOwner(file)?.pid === process.pid) fs.rmSync(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = readOwner(file);
    if (owner && owner.host === me.host && isRunning(owner.pid)) throw new StoreBusyError(owner, role);
    // Left by a process that is gone (or unreadable half-written): remove it and try again.
    fs.rmSync(file, { force: true });
  }
  throw new Error(`could not take the store lock ${file}`);
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as LockOwner;
    return Number.isInteger(owner.pid) ? owner : undefined;
  } catch {
    return undefined;
  }
}

/** A live process with that pid that runs node (a recycled pid of another program does not count). */
function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;  // no /proc: trust the signal check
  }
}
