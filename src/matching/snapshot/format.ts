// The gallery snapshot file: one account's int8 index rows (IndexGallery.exportCodes), sealed, so a start
// loads them instead of re-quantising every template from the store. docs/index-snapshot.md describes it.
//
//   "FCIDXSNP" | u32 format (1) | u32 header length H | header JSON (H bytes) | SHA-256 of the bytes before it
//   chunk 0 | chunk 1 | ... | chunk n-1                each: AES-256-GCM ciphertext | 16-byte tag
//
// Each chunk holds whole rows (ROWS_PER_CHUNK, the last fewer), so chunks are unsealed in parallel and
// imported as they come:
//   u32 rows | u32 key bytes | rows x f32 scale | rows x i32 code sum | rows x stride codes | keys joined by '\0'
// The key is HKDF-SHA256 of the store's data key with the header's random salt (a fresh key per file), so a
// chunk's nonce is its number; every chunk's additional data is the whole header block, its number and
// whether it is the last, so a header changed by one bit, chunks swapped, dropped or cut short fail to open.
import crypto from 'node:crypto';

export const MAGIC = Buffer.from('FCIDXSNP', 'ascii');
export const FORMAT = 1;
export const KEY_PURPOSE = 'face-check index snapshot v1';
export const TAG_BYTES = 16;
const SALT_BYTES = 16;
const PREFIX = 16;  // magic, format, header length
const HEADER_HASH = 32;
/** Rows per chunk: ~3 MB at the engine's 704 values, small enough to pipeline, large enough to stream. */
export const ROWS_PER_CHUNK = 4096;
/** A header larger than this is damage, not a snapshot (1M rows list ~245 chunk sizes). */
const MAX_HEADER = 1 << 20;

export interface SnapshotHeader {
  format: number;
  accountId: string;
  /** The template model the codes were made from: another model's snapshot is never loaded. */
  modelId: string;
  /** CodeDump.layout: the index's row format; another layout is never loaded. */
  layout: string;
  dim: number;
  stride: number;
  count: number;
  /** The store's change sequence the snapshot reflects: every change of the account up to it is in it. */
  seq: number;
  /**
   * The change log's entry `seq` ([accountId, personId]; absent at 0): a store whose entry `seq` differs has
   * another history (e.g. an older copy of data.mdb that has been written to since), so its snapshot is not used.
   */
  seqEntry?: [string, string];
  /** ISO 8601 time of writing (for operators). */
  written: string;
  /** base64 salt of this file's key. */
  salt: string;
  /**
   * base64 of the store's data key wrapped by its key file, as the store keeps it (Store.dataKeyWrap): with
   * the key file alone a start opens the file while the store is still loading (./early-import.ts). Absent
   * in files written before it; a start then opens them after the store.
   */
  keyWrap?: string;
  /** Plain bytes of each chunk, in order. */
  chunks: number[];
}

/** A header as read back, with where its chunks lie. */
export interface ParsedHeader {
  header: SnapshotHeader;
  /** The header block (prefix, JSON, hash): every chunk's additional data starts with it. */
  block: Buffer;
  /** File offset of each chunk's ciphertext, and one past the last. */
  offsets: number[];
}

export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
}

export function newSalt(): Buffer {
  return crypto.randomBytes(SALT_BYTES);
}

export function headerBlock(header: SnapshotHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const block = Buffer.alloc(PREFIX + json.length + HEADER_HASH);
  MAGIC.copy(block, 0);
  block.writeUInt32LE(FORMAT, 8);
  block.writeUInt32LE(json.length, 12);
  json.copy(block, PREFIX);
  crypto.createHash('sha256').update(block.subarray(0, PREFIX + json.length)).digest().copy(block, PREFIX + json.length);
  return block;
}

/** How many bytes of the file's start hold the header block, from its first 16 bytes. */
export function headerBlockLength(prefix: Buffer): number {
  if (prefix.length < PREFIX || !prefix.subarray(0, 8).equals(MAGIC)) throw new SnapshotFormatError('not a gallery snapshot (magic)');
  const format = prefix.readUInt32LE(8);
  if (format !== FORMAT) throw new SnapshotFormatError(`snapshot format ${format}, this program reads ${FORMAT}`);
  const length = prefix.readUInt32LE(12);
  if (length < 2 || length > MAX_HEADER) throw new SnapshotFormatError(`snapshot header of ${length} bytes`);
  return PREFIX + length + HEADER_HASH;
}

export const HEADER_PREFIX_BYTES = PREFIX;

/** Checks the header block (hash, fields) and lays out the chunks; `fileSize` must match exactly. */
export function parseHeader(block: Buffer, fileSize: number): ParsedHeader {
  const length = headerBlockLength(block);
  if (block.length !== length) throw new SnapshotFormatError('snapshot header cut short');
  const jsonEnd = length - HEADER_HASH;
  const hash = crypto.createHash('sha256').update(block.subarray(0, jsonEnd)).digest();
  if (!hash.equals(block.subarray(jsonEnd))) throw new SnapshotFormatError('snapshot header checksum does not match');
  let header: SnapshotHeader;
  try {
    header = JSON.parse(block.subarray(PREFIX, jsonEnd).toString('utf8')) as SnapshotHeader;
  } catch {
    throw new SnapshotFormatError('snapshot header is not JSON');
  }
  const whole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (header.format !== FORMAT || typeof header.accountId !== 'string' || typeof header.modelId !== 'string' ||
    typeof header.layout !== 'string' || typeof header.salt !== 'string' || !whole(header.dim) || header.dim < 1 ||
    !whole(header.stride) || header.stride < header.dim || !whole(header.count) || !whole(header.seq) ||
    !Array.isArray(header.chunks) || !header.chunks.every(whole) || (header.keyWrap !== undefined && typeof header.keyWrap !== 'string') ||
    (header.seqEntry !== undefined && !(Array.isArray(header.seqEntry) && header.seqEntry.length === 2 && header.seqEntry.every((x) => typeof x === 'string')))) {
    throw new SnapshotFormatError('snapshot header fields are missing or malformed');
  }
  if (header.chunks.length !== Math.ceil(header.count / ROWS_PER_CHUNK)) {
    throw new SnapshotFormatError(`snapshot of ${header.count} rows lists ${header.chunks.length} chunks`);
  }
  const offsets = [length];
  for (const plain of header.chunks) offsets.push(offsets[offsets.length - 1] + plain + TAG_BYTES);
  if (offsets[offsets.length - 1] !== fileSize) {
    throw new SnapshotFormatError(`snapshot file of ${fileSize} bytes, its header describes ${offsets[offsets.length - 1]}`);
  }
  return { header, block, offsets };
}

/** The 12-byte nonce of chunk `index`: unique within the file, whose key is unique (fresh salt). */
export function chunkNonce(index: number): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeUInt32BE(index, 8);
  return nonce;
}

/** A chunk's additional data: the header block, its number, and whether it is the last. */
export function chunkAad(block: Buffer, index: number, last: boolean): Buffer {
  const tail = Buffer.alloc(5);
  tail.writeUInt32BE(index, 0);
  tail[4] = last ? 1 : 0;
  return Buffer.concat([block, tail]);
}

/** Plain bytes of a chunk of `rows` rows with `keyBytes` of keys. */
export function chunkBytes(rows: number, stride: number, keyBytes: number): number {
  return 8 + rows * 8 + rows * stride + keyBytes;
}

/** Writes a chunk's plain bytes into `out` (chunkBytes long). */
export function encodeChunk(out: Buffer, rows: number, stride: number, keys: Uint8Array, scales: Float32Array,
  sums: Int32Array, codes: Uint8Array): void {
  out.writeUInt32LE(rows, 0);
  out.writeUInt32LE(keys.byteLength, 4);
  let at = 8;
  out.set(new Uint8Array(scales.buffer, scales.byteOffset, rows * 4), at);
  at += rows * 4;
  out.set(new Uint8Array(sums.buffer, sums.byteOffset, rows * 4), at);
  at += rows * 4;
  out.set(codes.subarray(0, rows * stride), at);
  at += rows * stride;
  out.set(keys, at);
}
