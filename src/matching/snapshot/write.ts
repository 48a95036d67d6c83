// Writes one account's snapshot atomically: a temporary file in the snapshot folder (0600), every chunk
// sealed as it is written (the event loop gets a turn between chunks), fsync, rename over the previous
// snapshot, fsync the folder. A crash or a failure at any point leaves the previous snapshot whole; the
// temporary file is removed on failure (and any left by a crash at the next write or start).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import type { CodeDump } from '../index-gallery';
import { SNAPSHOT_SUFFIX } from './place';
import { chunkAad, chunkBytes, chunkNonce, encodeChunk, headerBlock, newSalt, ROWS_PER_CHUNK, TAG_BYTES, type SnapshotHeader } from './format';
import { syncFolder } from '../../storage/crypto/key-file';

/** Temporary files: `<name>.tmp-<pid>-<random>`; a start removes those whose writer is gone. */
export const TEMP_MARK = '.tmp-';

export interface WriteSnapshotInput {
  dir: string;
  file: string;
  accountId: string;
  modelId: string;
  seq: number;
  /** The change log's entry `seq` (SnapshotHeader.seqEntry). */
  seqEntry?: [string, string];
  dump: CodeDump;
  /** The file key for a salt (Store.deriveKey with the snapshot purpose). */
  keyFor: (salt: Uint8Array) => crypto.KeyObject;
  /** The store's wrapped data key (SnapshotHeader.keyWrap), when it has one. */
  keyWrap?: Uint8Array;
  /** Checked between chunks: true abandons the write (a bounded shutdown). */
  abandoned?: () => boolean;
}

export class SnapshotAbandoned extends Error {
  override name = 'SnapshotAbandoned';
}

/** The folder of snapshots, made 0700 when missing. */
export function snapshotFolder(dir: string): string {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((fs.statSync(dir).mode & 0o077) !== 0) fs.chmodSync(dir, 0o700);
  return dir;
}

/**
 * Byte ranges of each chunk's keys in the joined keys (rows separated by one '\0'). A million keys are a
 * long scan for one turn: the event loop gets a turn every 16 chunks.
 */
async function keyRanges(keys: Buffer, count: number): Promise<Array<[number, number]>> {
  const ranges: Array<[number, number]> = [];
  let start = 0;
  let row = 0;
  while (row < count) {
    const rows = Math.min(ROWS_PER_CHUNK, count - row);
    let end = start;
    for (let k = 0; k < rows; k++) {
      const sep = keys.indexOf(0, end);
      end = (sep < 0 ? keys.length : sep) + 1;
    }
    ranges.push([start, end - 1]);  // without the separator after the chunk's last key
    start = end;
    row += rows;
    if (ranges.length % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return ranges;
}

/** Writes the snapshot; returns its size in bytes. */
export async function writeSnapshot(input: WriteSnapshotInput): Promise<number> {
  const { dump } = input;
  const keys = Buffer.from(dump.keys, 'utf8');
  const ranges = await keyRanges(keys, dump.count);
  const salt = newSalt();
  const header: SnapshotHeader = {
    format: 1, accountId: input.accountId, modelId: input.modelId, layout: dump.layout, dim: dump.dim,
    stride: dump.stride, count: dump.count, seq: input.seq, ...(input.seqEntry ? { seqEntry: input.seqEntry } : {}),
    written: new Date().toISOString(),
    salt: salt.toString('base64'),
    ...(input.keyWrap ? { keyWrap: Buffer.from(input.keyWrap).toString('base64') } : {}),
    chunks: ranges.map(([a, b], i) => chunkBytes(Math.min(ROWS_PER_CHUNK, dump.count - i * ROWS_PER_CHUNK), dump.stride, b - a)),
  };
  const block = headerBlock(header);
  const key = input.keyFor(salt);
  const target = path.join(snapshotFolder(input.dir), input.file);
  const temp = `${target}${TEMP_MARK}${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  const out = await fs.promises.open(temp, 'wx', 0o600);
  let closed = false;
  try {
    let at = 0;
    const put = async (bytes: Uint8Array) => {
      let done = 0;
      while (done < bytes.byteLength) done += (await out.write(bytes, done, bytes.byteLength - done, at + done)).bytesWritten;
      at += bytes.byteLength;
    };
    await put(block);
    const plain = Buffer.allocUnsafe(Math.max(0, ...header.chunks));
    for (let i = 0; i < header.chunks.length; i++) {
      if (input.abandoned?.()) throw new SnapshotAbandoned('snapshot write abandoned');
      const row = i * ROWS_PER_CHUNK;
      const rows = Math.min(ROWS_PER_CHUNK, dump.count - row);
      const [ka, kb] = ranges[i];
      const bytes = plain.subarray(0, header.chunks[i]);
      encodeChunk(bytes, rows, dump.stride, keys.subarray(ka, kb), dump.scales.subarray(row, row + rows),
        dump.sums.subarray(row, row + rows), dump.codes.subarray(row * dump.stride, (row + rows) * dump.stride));
      const cipher = crypto.createCipheriv('aes-256-gcm', key, chunkNonce(i), { authTagLength: TAG_BYTES });
      cipher.setAAD(chunkAad(block, i, i === header.chunks.length - 1));
      await put(Buffer.concat([cipher.update(bytes), cipher.final(), cipher.getAuthTag()]));
    }
    await out.sync();
    await out.close();
    closed = true;
    await fs.promises.rename(temp, target);
    syncFolder(path.dirname(target));
    return at;
  } catch (err) {
    if (!closed) await out.close().catch(() => undefined);
    await fs.promises.rm(temp, { force: true });
    throw err;
  }
}

/** Bytes at the start of a snapshot that hold its header, whatever its size (MAX_HEADER and its frame). */
const HEADER_ROOM = (1 << 20) + 64;

/**
 * Removes every snapshot in `dir` (and any temporary one), its header overwritten with zeros and synced
 * first: a header carries the data key as wrapped by the key file, so after a rotation of that key no copy
 * of the previous wrap may stay readable in a file (on copy-on-write file systems and flash the old blocks
 * may survive anyway, as for the store itself). Returns how many files were removed and the ones that could
 * not be (with why).
 */
export function discardSnapshots(dir: string): { removed: number; failed: string[] } {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return { removed: 0, failed: [] };
  }
  let removed = 0;
  const failed: string[] = [];
  for (const name of names) {
    if (!name.endsWith(SNAPSHOT_SUFFIX) && !name.includes(TEMP_MARK)) continue;
    const file = path.join(dir, name);
    try {
      const fd = fs.openSync(file, 'r+');
      try {
        const size = fs.fstatSync(fd).size;
        fs.writeSync(fd, Buffer.alloc(Math.min(size, HEADER_ROOM)), 0, Math.min(size, HEADER_ROOM), 0);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.rmSync(file, { force: true });
      removed++;
    } catch (err) {
      failed.push(`${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  if (removed > 0) syncFolder(dir);
  return { removed, failed };
}

/** Removes temporary files whose writing process is gone (a crash mid-write). */
export function removeStaleTemps(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const at = name.indexOf(TEMP_MARK);
    if (at < 0) continue;
    const pid = Number(name.slice(at + TEMP_MARK.length).split('-')[0]);
    if (pid !== process.pid && !alive(pid)) fs.rmSync(path.join(dir, name), { force: true });
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

