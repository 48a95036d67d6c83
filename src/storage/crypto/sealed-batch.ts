// Sealed values (./aead.ts's format) opened in batches of float32 templates. Natively, the addon's
// openSealedTemplates (native/addon/sealed_batch_binding.cpp) opens a batch on every core, off the event
// loop, with the process's own OpenSSL found at run time; where it cannot, openSealedBatchHere opens the same
// batch in JavaScript on this thread. Arguments are checked here, before the addon sees them; both report
// the first failing row and why, and the caller builds its SealError from that.
import crypto from 'node:crypto';

import { openOrFault } from './aead';
import type { NativeAddon } from '../../native';

/** Why a row did not open, in the order the checks run (as openBytes in ./aead.ts checks). */
export type SealedRowFault = 'short' | 'version' | 'tag' | 'size';

export interface SealedBatchOutcome {
  /** The lowest row that did not open, or -1 when all did. */
  failedRow: number;
  reason: SealedRowFault | '';
  /** 'short': the sealed value's length; 'size': its plain length. */
  bytes: number;
  /** 'version': the version byte found. */
  version: number;
}

/** One batch: row i is sealed[sealedOffsets[i] … sealedOffsets[i + 1]) with its AAD likewise. */
export interface SealedBatchInput {
  sealed: Uint8Array;
  sealedOffsets: Uint32Array;
  aad: Uint8Array;
  aadOffsets: Uint32Array;
  /** At least rows × dimension values; row i lands at i × dimension. */
  out: Float32Array;
  dimension: number;
}

interface SealedBatchBinding {
  sealedTemplatesAvailable(): { available: boolean; reason: string };
  openSealedTemplates(key: Uint8Array, sealed: Uint8Array, sealedOffsets: Uint32Array, aad: Uint8Array,
    aadOffsets: Uint32Array, out: Float32Array, dimension: number, threads: number):
    Promise<Omit<SealedBatchOutcome, 'reason'> & { reason: SealedRowFault | 'unavailable' | ''; detail: string }>;
}

let binding: { available: true; addon: SealedBatchBinding } | { available: false; reason: string } | undefined;

function loaded(): typeof binding & object {
  if (binding) return binding;
  try {
    // Loaded on first use: storage opened without the addon built (a CLI, a test) keeps its JavaScript path.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const addon = (require('../../native') as { native: NativeAddon }).native as unknown as Partial<SealedBatchBinding>;
    if (typeof addon.openSealedTemplates !== 'function' || typeof addon.sealedTemplatesAvailable !== 'function') {
      binding = { available: false, reason: 'the addon has no openSealedTemplates' };
    } else {
      const found = addon.sealedTemplatesAvailable();
      binding = found.available ? { available: true, addon: addon as SealedBatchBinding } : { available: false, reason: found.reason };
    }
  } catch (err) {
    binding = { available: false, reason: (err as Error).message };
  }
  return binding;
}

/** Whether sealed values can be opened natively here; `reason` says why not. */
export function sealedBatchAvailable(): { available: boolean; reason: string } {
  const b = loaded();
  return b.available ? { available: true, reason: '' } : { available: false, reason: b.reason };
}

/** Throws a RangeError unless `offsets` are rows + 1 boundaries, not decreasing, within `bytes`. */
export function checkOffsets(name: string, offsets: Uint32Array, rows: number, bytes: number): void {
  if (offsets.length !== rows + 1) throw new RangeError(`sealed batch: ${name} must hold rows + 1 offsets`);
  for (let i = 0; i < rows; i++) {
    if (offsets[i + 1] < offsets[i]) throw new RangeError(`sealed batch: ${name} decrease at row ${i}`);
  }
  if (offsets[rows] > bytes) throw new RangeError(`sealed batch: ${name} end past their buffer`);
}

function checkBatch(batch: SealedBatchInput): number {
  const rows = batch.sealedOffsets.length - 1;
  if (rows < 0) throw new RangeError('sealed batch: no offsets');
  if (!Number.isInteger(batch.dimension) || batch.dimension < 1) throw new RangeError('sealed batch: dimension must be a positive integer');
  checkOffsets('sealedOffsets', batch.sealedOffsets, rows, batch.sealed.byteLength);
  checkOffsets('aadOffsets', batch.aadOffsets, rows, batch.aad.byteLength);
  if (batch.out.length < rows * batch.dimension) throw new RangeError('sealed batch: out holds fewer than rows × dimension values');
  return rows;
}

/** openSealedBatch's result, in JavaScript on this thread: every row is checked, the lowest failing one named. */
export function openSealedBatchHere(key: crypto.KeyObject | Uint8Array, batch: SealedBatchInput): SealedBatchOutcome {
  const rows = checkBatch(batch);
  const secret = key instanceof Uint8Array ? crypto.createSecretKey(key) : key;
  const width = batch.dimension * 4;
  const out = new Uint8Array(batch.out.buffer, batch.out.byteOffset, rows * width);
  for (let i = 0; i < rows; i++) {
    const opened = openOrFault(secret, batch.sealed.subarray(batch.sealedOffsets[i], batch.sealedOffsets[i + 1]),
      batch.aad.subarray(batch.aadOffsets[i], batch.aadOffsets[i + 1]));
    if (!Buffer.isBuffer(opened)) {
      return { failedRow: i, reason: opened.fault, bytes: opened.fault === 'short' ? opened.bytes : 0, version: opened.fault === 'version' ? opened.version : 0 };
    }
    if (opened.length !== width) return { failedRow: i, reason: 'size', bytes: opened.length, version: 0 };
    out.set(opened, i * width);
    opened.fill(0);
  }
  return { failedRow: -1, reason: '', bytes: 0, version: 0 };
}

/**
 * Opens every row of `batch` with `key` into batch.out. Resolves with the first failing row (failedRow -1
 * when none); rejects only for a call that cannot run (bad arguments, no native AES-GCM).
 */
export async function openSealedBatch(key: crypto.KeyObject | Uint8Array, batch: SealedBatchInput,
  threads = 0): Promise<SealedBatchOutcome> {
  const b = loaded();
  if (!b.available) throw new Error(`sealed batch: not available here (${b.reason})`);
  checkBatch(batch);
  const raw = key instanceof Uint8Array ? key : key.export();
  try {
    const r = await b.addon.openSealedTemplates(raw, batch.sealed, batch.sealedOffsets, batch.aad, batch.aadOffsets,
      batch.out, batch.dimension, threads);
    if (r.reason === 'unavailable') throw new Error(`sealed batch: ${r.detail}`);
    return { failedRow: r.failedRow, reason: r.reason, bytes: r.bytes, version: r.version };
  } finally {
    // The addon copied the key when the call started; an exported copy made here does not stay in the heap.
    if (raw !== key) raw.fill(0);
  }
}
