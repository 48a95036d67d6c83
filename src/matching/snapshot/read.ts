// Reads a snapshot: the header first (small; enough to decide whether the snapshot fits the running program
// and store), then its chunks. Natively (sealedJob: the whole file for one Collection.importSealed, which
// reads and opens every chunk straight into the index), or, where that is not available, in JavaScript: in
// groups of GROUP_CHUNKS (one importCodes call each), opened on this thread for small files or by a pool of
// worker threads for large ones (./unseal.ts unsealPool), handed to the caller as they open (in any order: the
// rows' order in the index does not change any result).
import type crypto from 'node:crypto';
import fs from 'node:fs';

import { similarityIndex, type SealedJob } from '../../similarity-index/similarity-index';

import { chunkAad, chunkNonce, headerBlockLength, HEADER_PREFIX_BYTES, parseHeader, ROWS_PER_CHUNK, SnapshotFormatError, type ParsedHeader } from './format';
import { chooseUnsealer as choose, SealedLoader, type Unsealer } from '../../threads/sealed-loader';
import type { WorkerPool } from '../../threads/worker-pool';
import { recycleGroup, unsealPool, type GroupJob, type OpenedGroup } from './unseal';

/**
 * Chunks per group: 8 x 4096 rows (~23 MB at 704 values), one import each. An import has a fixed cost and
 * uses several threads only from 8192 rows; groups small enough to pipeline let the index take one while the
 * next ones open, and their memory is recycled (a few groups' worth of fresh pages in all).
 */
export const GROUP_CHUNKS = 8;

export type { Unsealer };

/** The unsealer a restore uses: `requested`, else FACE_CHECK_SNAPSHOT_UNSEAL, else native where available. */
export function chooseUnsealer(requested?: Unsealer): Unsealer {
  return choose(requested, process.env.FACE_CHECK_SNAPSHOT_UNSEAL, () => similarityIndex().sealedImport.available);
}

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
export function groupJobs(snapshot: OpenSnapshot, reopen: boolean, groupChunks = GROUP_CHUNKS): GroupJob[] {
  const { header, block, offsets, fd } = snapshot;
  const n = header.chunks.length;
  const jobs: GroupJob[] = [];
  for (let first = 0; first < n; first += groupChunks) {
    const chunks = [];
    let rows = 0;
    for (let i = first; i < Math.min(n, first + groupChunks); i++) {
      const r = Math.min(ROWS_PER_CHUNK, header.count - i * ROWS_PER_CHUNK);
      chunks.push({ offset: offsets[i], length: offsets[i + 1] - offsets[i], rows: r, nonce: chunkNonce(i), aad: chunkAad(block, i, i === n - 1) });
      rows += r;
    }
    jobs.push({ fd, reopen, stride: header.stride, rows, chunks });
  }
  return jobs;
}

/** The whole snapshot as one native import (Collection.importSealed): every chunk, its nonce and its AAD. */
export function sealedJob(snapshot: OpenSnapshot, key: Uint8Array): SealedJob {
  const jobs = groupJobs(snapshot, false, Math.max(1, snapshot.header.chunks.length));
  return { fd: snapshot.fd, key, stride: snapshot.header.stride, count: snapshot.header.count, chunks: jobs.flatMap((j) => j.chunks) };
}

/**
 * Reads and opens every group, calling `onGroup` for each as it opens (one call at a time, awaited; the next
 * groups open meanwhile). With a pool, its workers take groups as they come up (two each at a time), and
 * this thread opens groups itself until the first worker is ready, one ahead of the import. Rejects with a
 * SnapshotSealError or SnapshotFormatError when a chunk does not open or does not fit.
 */
export async function readGroups(snapshot: OpenSnapshot, key: crypto.KeyObject, pool: WorkerPool | undefined,
  onGroup: (group: OpenedGroup) => Promise<void>, timings: ReadTimings, groupChunks = GROUP_CHUNKS): Promise<void> {
  const jobs = groupJobs(snapshot, pool !== undefined, groupChunks);
  const here = unsealPool(1, true);
  const loader = new SealedLoader();
  let next = 0;
  // Group `rank` opened by `worker` of `by`; its memory goes back there once the index has copied it. A
  // worker whose group settled may take another.
  const open = (rank: number, by: WorkerPool, worker: number) => loader.add(rank, async () => {
    const group = await by.request<OpenedGroup>(worker, { key, job: jobs[rank] }).finally(() => by === pool && pump(worker));
    timings.readMs += group.readMs;
    timings.unsealMs += group.unsealMs;
    timings.bytes += group.codes.byteLength + group.scales.byteLength + group.sums.byteLength + group.keys.byteLength;
    return group;
  }, (group) => onGroup(group).then(() => recycleGroup(by, worker, group)));
  const pump = (worker: number) => {
    while (pool && !loader.stopped && next < jobs.length && pool.inFlight(worker) < 2) open(next++, pool, worker);
  };
  const unsubscribe = pool?.onReady(pump);
  try {
    while (!loader.stopped && next < jobs.length) {
      if (!pool?.anyReady() && loader.backlog <= 1) open(next++, here, 0);
      await loader.changed();
    }
    await loader.settle();
  } finally {
    unsubscribe?.();
    // The caller may drop the gallery: never under a running import, nor with groups still opening.
    loader.abort();
    await loader.settle().catch(() => undefined);
  }
}
