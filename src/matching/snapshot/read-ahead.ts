// The snapshot files read ahead from the very start of the process: the kernel reads them from the device
// while the program's modules load (bin/face-check.js starts this before loading the rest, through
// src/start/early-start.ts), so the import after the store opened finds most of them cached. It stops when the
// store opens (stopSnapshotReadAhead, src/start/start-service.ts): from then on the store's own reads are page faults,
// each a small read that would wait behind whatever the device still has queued, and the import's own
// prefetcher (native/core/sealed/sealed_import.cpp) reads the rest. Light on purpose: no store, no lmdb.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { readFilesAhead, type ReadAheadHandle } from '../../storage/read-ahead';
import { SNAPSHOT_FOLDER, SNAPSHOT_SUFFIX } from './place';

let running: ReadAheadHandle | undefined;

/**
 * Starts reading the snapshot files of the store at `storagePath` (up to half the memory available: what is
 * read ahead must not push out what the process is about to use). Nothing when there are none.
 */
export function startSnapshotReadAhead(storagePath: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(path.join(storagePath, SNAPSHOT_FOLDER)).filter((n) => n.endsWith(SNAPSHOT_SUFFIX)).sort();
  } catch {
    return;  // no folder yet: nothing to read
  }
  running?.stop();
  running = readFilesAhead(names.map((n) => path.join(storagePath, SNAPSHOT_FOLDER, n)), Math.floor(os.freemem() / 2));
}

/** Stops the read-ahead started above, if any (the store is about to be opened). */
export function stopSnapshotReadAhead(): void {
  running?.stop();
  running = undefined;
}
