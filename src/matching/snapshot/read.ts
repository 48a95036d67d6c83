// Reads a snapshot: the header first (small; enough to decide whether the snapshot fits the running program
// and store), then its chunks in groups of GROUP_CHUNKS (one importCodes call each), opened on this thread
// for small files or by a pool of worker threads for large ones (./unseal-pool.ts), handed to the caller as
// they open (in any order: the rows' order in the index does not change any result).
import type crypto from 'node:crypto';
import fs from 'node:fs';

import { chunkAad, chunkNonce, headerBlockLength, HEADER_PREFIX_BYTES, parseHeader, ROWS_PER_CHUNK, SnapshotFormatError, type ParsedHeader } from './format';
import { openGroupHere, type GroupJob, type OpenedGroup } from './unseal';
import type { UnsealPool } from './unseal-pool';

/**
 * Chunks per group: 16 x 4096 rows (~46 MB at 704 values). One import per group: an import has a fixed cost
 * and uses several threads only from 8192 rows, while groups small enough to pipeline let the index take one
 * group as the next ones open.
 */
export const GROUP_CHUNKS = 16;

export interface OpenSnapshot extends ParsedHeader {
  fd: number;
  size: number;
}

/** Opens a snapshot file and checks its header; undefined when there is no such file. */
export function openSnapshot(file: string): OpenSnapshot | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const prefix = Buffer.alloc(HEADER_PREFIX_BYTES);
    if (fs.readSync(fd, prefix, 0, prefix.length, 0) !== prefix.length) throw new SnapshotFormatError('snapshot file shorter than its header');
    const block = Buffer.alloc(headerBlockLength(prefix));
    if (fs.readSync(fd, block, 0, block.length, 0) !== block.length) throw new SnapshotFormatError('snapshot header cut short');
    return { ...parseHeader(block, size), fd, size };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

export function closeSnapshot(snapshot: OpenSnapshot): void {
  fs.closeSync(snapshot.fd);
}

/** Busy time of each stage (ms), summed over groups; with a pool, reading and unsealing overlap the imports. */
export interface ReadTimings {
  readMs: number;
  unsealMs: number;
  /** Unsealed bytes. */
  bytes: number;
}

/** The groups of a snapshot, as jobs. */
export function groupJobs(snapshot: OpenSnapshot, reopen: boolean): GroupJob[] {
  const { header, block, offsets, fd } = snapshot;
  const n = header.chunks.length;
  const jobs: GroupJob[] = [];
  for (let first = 0; first < n; first += GROUP_CHUNKS) {
    const chunks = [];
    let rows = 0;
    for (let i = first; i < Math.min(n, first + GROUP_CHUNKS); i++) {
      const r = Math.min(ROWS_PER_CHUNK, header.count - i * ROWS_PER_CHUNK);
      chunks.push({ offset: offsets[i], length: offsets[i + 1] - offsets[i], rows: r, nonce: chunkNonce(i), aad: chunkAad(block, i, i === n - 1) });
      rows += r;
    }
    jobs.push({ fd, reopen, stride: header.stride, rows, chunks });
  }
  return jobs;
}

/**
 * Reads and opens every group, calling `onGroup` for each as it opens (one call at a time, awaited).
 * Rejects with a SnapshotSealError or SnapshotFormatError when a chunk does not open or does not fit.
 */
export async function readGroups(snapshot: OpenSnapshot, key: crypto.KeyObject, pool: UnsealPool | undefined,
  onGroup: (group: OpenedGroup) => Promise<void>, timings: ReadTimings): Promise<void> {
  const jobs = groupJobs(snapshot, pool !== undefined);
  const account = (g: OpenedGroup) => {
    timings.readMs += g.readMs;
    timings.unsealMs += g.unsealMs;
    timings.bytes += g.codes.byteLength + g.scales.byteLength + g.sums.byteLength + g.keys.byteLength;
  };
  if (!pool) {
    for (const job of jobs) {
      const g = openGroupHere(job, key);
      account(g);
      await onGroup(g);
    }
    return;
  }
  // A window of groups in flight: the pool reads and opens them while earlier ones are imported.
  const window = pool.size * 2;
  let next = 0;
  let failed: unknown;
  let chain: Promise<void> = Promise.resolve();
  const inFlight = new Set<Promise<void>>();
  const start = (job: GroupJob) => {
    const p: Promise<void> = pool.open(key, job).then((g) => {
      account(g);
      chain = chain.then(async () => {
        try {
          if (failed === undefined) await onGroup(g);
        } catch (err) {
          failed ??= err;
        }
      });
      return chain;
    }, (err: unknown) => { failed ??= err; }).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  while (next < jobs.length && failed === undefined) {
    while (inFlight.size < window && next < jobs.length) start(jobs[next++]);
    await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await chain;
  if (failed !== undefined) throw failed;
}
