// Opening a group of consecutive snapshot chunks into one set of row arrays (what one importCodes call
// takes). The same code runs on the main thread for small snapshots and in the worker threads of
// ./unseal-pool.ts for large ones, so it is kept as JavaScript source: a worker started from a string runs
// alike under the TypeScript test loader and from dist/, and the main thread compiles the same string once.
import type crypto from 'node:crypto';

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
// does not verify), 'format' (a chunk's rows or sizes differ from the header's).
const GROUP_SOURCE = `
let sealedBuffer = Buffer.alloc(0);
function openGroup(job, key) {
  const fs = require('node:fs');
  const crypto = require('node:crypto');
  const fail = (code) => Object.assign(new Error(code), { code });
  const codes = new Uint8Array(job.rows * job.stride);
  const scales = new Float32Array(job.rows);
  const sums = new Int32Array(job.rows);
  const scaleBytes = new Uint8Array(scales.buffer);
  const sumBytes = new Uint8Array(sums.buffer);
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
      if (end < 8) throw fail('format');
      const d = crypto.createDecipheriv('aes-256-gcm', key, c.nonce, { authTagLength: ${TAG_BYTES} });
      d.setAAD(c.aad);
      d.setAuthTag(sealed.subarray(end));
      const plain = d.update(sealed.subarray(0, end));
      try { d.final(); } catch { throw fail('open'); }
      unsealMs += performance.now() - t;
      const rows = plain.readUInt32LE(0), keyBytes = plain.readUInt32LE(4);
      if (rows !== c.rows || row + rows > job.rows || 8 + rows * (8 + job.stride) + keyBytes !== plain.length) throw fail('format');
      let at = 8;
      scaleBytes.set(plain.subarray(at, at + rows * 4), row * 4); at += rows * 4;
      sumBytes.set(plain.subarray(at, at + rows * 4), row * 4); at += rows * 4;
      codes.set(plain.subarray(at, at + rows * job.stride), row * job.stride); at += rows * job.stride;
      if (keyParts.length) keyParts.push(Buffer.alloc(1));
      keyParts.push(Buffer.from(plain.subarray(at, at + keyBytes)));
      row += rows;
    }
  } finally {
    if (own) fs.closeSync(fd);
  }
  if (row !== job.rows) throw fail('format');
  const keys = Buffer.concat(keyParts);
  const keyCopy = new Uint8Array(keys.length);  // its own memory, never the shared pool: it may move to another thread
  keyCopy.set(keys);
  return { rows: row, codes, scales, sums, keys: keyCopy, readMs, unsealMs };
}
`;

/** The worker: opens the groups it is sent and moves the arrays back (transferred, not copied). */
export const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
${GROUP_SOURCE}
parentPort.on('message', (m) => {
  try {
    const g = openGroup(m.job, m.key);
    parentPort.postMessage({ id: m.id, group: g }, [g.codes.buffer, g.scales.buffer, g.sums.buffer, g.keys.buffer]);
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: err.code || 'error', message: String(err.message) });
  }
});
`;

type OpenGroup = (job: GroupJob, key: crypto.KeyObject) => OpenedGroup;

let compiled: OpenGroup | undefined;

/** Opens a group on this thread (small snapshots). */
export function openGroupHere(job: GroupJob, key: crypto.KeyObject): OpenedGroup {
  compiled ??= new Function('require', `${GROUP_SOURCE}\nreturn openGroup;`)(require) as OpenGroup;
  try {
    return compiled(job, key);
  } catch (err) {
    throw groupError((err as { code?: string }).code, (err as Error).message);
  }
}

/** The error a group failure code stands for. */
export function groupError(code: string | undefined, message: string): Error {
  if (code === 'open') return new SnapshotSealError('snapshot chunk does not open (damaged, cut short, or another store\'s key)');
  if (code === 'cut') return new SnapshotFormatError('snapshot file cut short');
  if (code === 'format') return new SnapshotFormatError('snapshot chunk does not match its header');
  return new Error(`snapshot chunk: ${message}`);
}
