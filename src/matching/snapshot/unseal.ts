// Opening a group of consecutive snapshot chunks into one set of row arrays (what one importCodes call
// takes). The same code runs on the main thread for small snapshots and in the worker threads of
// unsealPool (below) for large ones, so it is kept as JavaScript source: a worker started from a string runs
// alike under the TypeScript test loader and from dist/, and the main thread compiles the same string once.
import { WorkerPool } from '../../threads/worker-pool';
import { TAG_BYTES } from './format';
import { SnapshotFormatError } from './format';

/** A chunk that does not open: damaged, cut, moved, or sealed under another store's key. */
export class SnapshotSealError extends Error {
  override name = 'SnapshotSealError';
}

export interface GroupChunk {
  offset: number;
  /** Ciphertext and tag. */
  length: number;
  rows: number;
  nonce: Uint8Array;
  aad: Uint8Array;
}

export interface GroupJob {
  fd: number;
  /** Read through a descriptor of its own (/proc/self/fd/N): the kernel's read-ahead then follows each reader. */
  reopen: boolean;
  stride: number;
  rows: number;
  chunks: GroupChunk[];
}

export interface OpenedGroup {
  rows: number;
  codes: Uint8Array;
  scales: Float32Array;
  sums: Int32Array;
  /** The rows' keys, UTF-8, joined by '\0'. */
  keys: Uint8Array;
  readMs: number;
  unsealMs: number;
}

// Plain JavaScript (see the file comment). Errors carry .code: 'cut' (the file ends early), 'open' (a tag
// does not verify), 'format' (a chunk's rows or sizes differ from the header's). A chunk is deciphered in
// pieces of 256 KiB, each copied at once to where its bytes belong (scales, sums, codes, keys): Node
// allocates every deciphered piece, and small ones come from reused memory, where a whole chunk's piece
// would need fresh pages faulted in (figures: docs/benchmarks.md).
const GROUP_SOURCE = `
const PIECE = 262144;
let sealedBuffer = Buffer.alloc(0);
const spares = [];
function openGroup(job, key) {
  const fs = require('node:fs');
  const crypto = require('node:crypto');
  const fail = (code) => Object.assign(new Error(code), { code });
  // Every byte of the views below is written: a recycled set needs no clearing.
  const i = spares.findIndex((s) => s.codes.byteLength >= job.rows * job.stride && s.scales.byteLength >= job.rows * 4);
  const spare = i >= 0 ? spares.splice(i, 1)[0] : undefined;
  const codes = spare ? new Uint8Array(spare.codes, 0, job.rows * job.stride) : new Uint8Array(job.rows * job.stride);
  const scales = spare ? new Float32Array(spare.scales, 0, job.rows) : new Float32Array(job.rows);
  const sums = spare ? new Int32Array(spare.sums, 0, job.rows) : new Int32Array(job.rows);
  const scaleBytes = new Uint8Array(scales.buffer, 0, job.rows * 4);
  const sumBytes = new Uint8Array(sums.buffer, 0, job.rows * 4);
  const keyParts = [];
  let fd = job.fd;
  let own = false;
  if (job.reopen) {
    try { fd = fs.openSync('/proc/self/fd/' + job.fd, 'r'); own = true; } catch { fd = job.fd; }
  }
  let row = 0, readMs = 0, unsealMs = 0;
  try {
    for (const c of job.chunks) {
      if (sealedBuffer.length < c.length) sealedBuffer = Buffer.allocUnsafeSlow(c.length);
      const sealed = sealedBuffer.subarray(0, c.length);
      let t = performance.now();
      for (let got = 0; got < c.length;) {
        const r = fs.readSync(fd, sealed, got, c.length - got, c.offset + got);
        if (r === 0) throw fail('cut');
        got += r;
      }
      readMs += performance.now() - t;
      t = performance.now();
      const end = c.length - ${TAG_BYTES};
      const rows = c.rows;
      const keyBytes = end - 8 - rows * (8 + job.stride);
      if (keyBytes < 0 || row + rows > job.rows) throw fail('format');
      const head = Buffer.alloc(8);
      const keys = Buffer.allocUnsafe(keyBytes);
      const parts = [[8, head, 0], [rows * 4, scaleBytes, row * 4], [rows * 4, sumBytes, row * 4],
        [rows * job.stride, codes, row * job.stride], [keyBytes, keys, 0]];
      let part = 0, partAt = 0;
      const d = crypto.createDecipheriv('aes-256-gcm', key, c.nonce, { authTagLength: ${TAG_BYTES} });
      d.setAAD(c.aad);
      d.setAuthTag(sealed.subarray(end));
      for (let p = 0; p < end; p += PIECE) {
        const out = d.update(sealed.subarray(p, Math.min(end, p + PIECE)));
        for (let o = 0; o < out.length;) {
          while (partAt === parts[part][0]) { part++; partAt = 0; }
          const [len, dest, base] = parts[part];
          const n = Math.min(len - partAt, out.length - o);
          dest.set(out.subarray(o, o + n), base + partAt);
          o += n;
          partAt += n;
        }
      }
      try { d.final(); } catch { throw fail('open'); }
      unsealMs += performance.now() - t;
      if (head.readUInt32LE(0) !== rows || head.readUInt32LE(4) !== keyBytes) throw fail('format');
      if (keyParts.length) keyParts.push(Buffer.alloc(1));
      keyParts.push(keys);
      row += rows;
    }
  } finally {
    if (own) fs.closeSync(fd);
  }
  if (row !== job.rows) throw fail('format');
  const joined = Buffer.concat(keyParts);
  const keys = new Uint8Array(joined.length);  // its own memory, never the shared pool: it may move to another thread
  keys.set(joined);
  return { rows: row, codes, scales, sums, keys, readMs, unsealMs };
}
function recycleGroup(buffers) {
  if (spares.length < 4) spares.push(buffers);
}
`;

/**
 * The handler: opens the groups it is sent and moves the arrays back (transferred, not copied); a group's
 * memory comes back once the index has copied it (fresh pages cost as much as AES).
 */
const HANDLE_SOURCE = `
${GROUP_SOURCE}
function handle(m) {
  if (m.recycle) return recycleGroup(m.recycle);
  const g = openGroup(m.job, m.key);
  return [g, [g.codes.buffer, g.scales.buffer, g.sums.buffer, g.keys.buffer]];
}
`;

/**
 * Worker threads that read and open groups of snapshot chunks, so a large snapshot is unsealed on every core
 * while the main thread hands finished groups to the index; reading on the workers also keeps several disk
 * reads in flight. They start at once (make the pool before it is needed): a worker takes a while to boot,
 * and the reader (./read.ts) opens groups on the main thread (`here`) until one is ready.
 */
export function unsealPool(size: number, here = false): WorkerPool {
  return new WorkerPool({ source: HANDLE_SOURCE, size, here, errorOf: (err) => groupError(err.code, err.message) });
}

/** Gives an opened group's memory back to where it was opened (moved, not copied). */
export function recycleGroup(pool: WorkerPool, worker: number, g: OpenedGroup): void {
  const buffers = [g.codes.buffer, g.scales.buffer, g.sums.buffer] as ArrayBuffer[];
  pool.post(worker, { recycle: { codes: buffers[0], scales: buffers[1], sums: buffers[2] } }, buffers);
}

/** The error a group failure code stands for. */
export function groupError(code: string | undefined, message: string): Error {
  if (code === 'open') return new SnapshotSealError('snapshot chunk does not open (damaged, cut short, or another store\'s key)');
  if (code === 'cut') return new SnapshotFormatError('snapshot file cut short');
  if (code === 'format') return new SnapshotFormatError('snapshot chunk does not match its header');
  return new Error(`snapshot chunk: ${message}`);
}
