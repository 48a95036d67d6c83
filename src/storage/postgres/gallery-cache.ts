// A PostgreSQL node's own copy of the persons' sealed templates, in a local LMDB environment
// (<storage path>/gallery-cache): what the node's similarity index re-ranks its int8 candidates with, as a
// board re-ranks from its store's template rows, so the index keeps no float32 copy and a search never reads
// the database. Each row is the persons table's value as it is (sealed under the cluster's data key, its place
// [account, person, model] authenticated), keyed [account, person]; only templates of the node's model are kept.
//
// The rows are the table's state at `position` (a change-log seq), kept in the same LMDB transaction as the
// rows, so a restarted node replays the log from there, with the log's entry at that seq (`mark`): a database
// whose entry there differs (one restored from a backup, whose seqs were drawn again) is copied anew. The change follower is the only writer: it writes a
// batch here before the galleries see it, so a row is never older than the index entry it re-scores (a
// person removed on another node leaves this cache when it leaves the index). A cache names the database it
// copies (a fingerprint of its data key) and the model; one that names another, or that a fill left
// incomplete, is not used.
import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';

import type { FollowedChange, PersonChange } from '../interfaces';
import { storageBinding } from '../native-storage';
import { galleryCacheReadable } from './gallery-cache-probe';

export const GALLERY_CACHE_DIR = 'gallery-cache';
/**
 * Rows read (by re-ranks or a scan) between two releases of the map's pages from the process's resident set
 * (release()): every row read maps a page of the file, and without a release a node's resident memory would
 * grow toward the file's size (~4 KB a person) as searches reach more persons. A read fault also maps the
 * neighbouring pages the page cache holds (the kernel's fault-around, up to 16 pages, which MADV_RANDOM does
 * not turn off), so this bounds the mapped part to about 256 x 17 pages whatever the gallery's size. The page
 * cache keeps the pages; a row read again after a release maps its page again without a disk read.
 */
const RELEASE_EVERY_ROWS = 256;

type PersonKey = [string, string];

/** The change log's entry at a cache's position, as the log holds it. */
export type LogMark = Pick<PersonChange, 'seq' | 'accountId' | 'personId' | 'at'>;

export function logMarkOf(change: LogMark): LogMark {
  return { seq: change.seq, accountId: change.accountId, personId: change.personId, at: change.at };
}

interface CacheState {
  /** Fingerprint of the database whose rows these are. */
  database: string;
  modelId: string;
  /** The change-log seq the rows stand at. */
  position: number;
  /** The log's entry at `position` (none: position 0, or the log was emptied up to it when the fill began). */
  mark?: LogMark;
  /** False while a fill runs (a crash leaves it false: the next start copies again). */
  complete: boolean;
}

/** One account's cached rows of one sealed length: row i is sealed[offsets[i] … offsets[i + 1]). */
export interface CachedBlock {
  accountId: string;
  ids: string[];
  sealed: Buffer;
  offsets: Uint32Array;
}

export class GalleryCache {
  private readSinceRelease = 0;

  private constructor(private readonly root: RootDatabase, private readonly rows: Database<Buffer, PersonKey>,
    private readonly meta: Database<CacheState, string>, readonly dir: string) {}

  /**
   * Opens (or makes) the cache in `dir`. It is removed and made anew when LMDB cannot read it
   * (./gallery-cache-probe.ts, or an error at open), or when the machine went down while it was open (its
   * commits are not synced one by one: see openIn); `damaged` says so.
   */
  static open(dir: string): { cache: GalleryCache; damaged: boolean } {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const remove = () => { for (const f of ['data.mdb', 'lock.mdb']) fs.rmSync(path.join(dir, f), { force: true }); };
    let damaged = false;
    const previous = readOpenMark(dir);
    if ((previous?.open && (previous.boot === '' || previous.boot !== bootId())) || !galleryCacheReadable(dir)) {
      remove();
      damaged = true;
    }
    writeOpenMark(dir, { open: true, boot: bootId() });
    try {
      return { cache: GalleryCache.openIn(dir), damaged };
    } catch {
      remove();
      return { cache: GalleryCache.openIn(dir), damaged: true };
    }
  }

  private static openIn(dir: string): GalleryCache {
    // Commits are not synced one by one (a fill of 1M rows, a batch on every write the node follows): a
    // process that ends, however abruptly, leaves them in the page cache, whole. A machine that goes down
    // may leave the file torn, which the open mark tells (open() makes the cache anew); an orderly close
    // syncs the file first. noReadAhead: a re-rank reads a few dozen rows scattered over the file.
    const root = open({ path: dir, compression: false, maxDbs: 4, noSync: true, noReadAhead: true } as RootDatabaseOptionsWithPath);
    try {
      const rows = root.openDB<Buffer, PersonKey>({ name: 'rows', encoding: 'binary' });
      const meta = root.openDB<CacheState, string>({ name: 'meta' });
      meta.get('state');  // a damaged file throws here rather than later
      for (const f of ['data.mdb', 'lock.mdb']) fs.chmodSync(path.join(dir, f), 0o600);
      return new GalleryCache(root, rows, meta, dir);
    } catch (err) {
      void root.close();
      throw err;
    }
  }

  /** LMDB's data file (for the page-cache advice of its map). */
  get dataFile(): string {
    return path.join(this.dir, 'data.mdb');
  }

  /** Where the rows stand, when they are a complete copy of `database`'s templates of `modelId`. */
  usable(database: string, modelId: string): { position: number; mark: LogMark | undefined } | undefined {
    const s = this.meta.get('state');
    return s && s.complete && s.database === database && s.modelId === modelId ? { position: s.position, mark: s.mark } : undefined;
  }

  /** Whether the cache holds rows of `database` and `modelId` (complete or not): a fill may keep them in place. */
  holds(database: string, modelId: string): boolean {
    const s = this.meta.get('state');
    return s !== undefined && s.database === database && s.modelId === modelId;
  }

  /**
   * Before a fill: marks the cache incomplete for `database` and `modelId`; `keep` false empties it (rows of
   * another database or model), true leaves the rows for searches meanwhile (finish() removes the unseen).
   */
  async beginFill(database: string, modelId: string, keep: boolean): Promise<void> {
    await this.meta.put('state', { database, modelId, position: 0, complete: false });
    if (!keep) await this.rows.clearAsync();
  }

  /** Rows of a fill, as the table holds them. */
  putBlock(accountId: string, ids: readonly string[], sealed: Uint8Array, offsets: Uint32Array, seen?: Set<string>): Promise<boolean> {
    return this.root.transaction(() => {
      for (let i = 0; i < ids.length; i++) {
        void this.rows.put([accountId, ids[i]], Buffer.from(sealed.buffer, sealed.byteOffset + offsets[i], offsets[i + 1] - offsets[i]));
        seen?.add(`${accountId}\u0000${ids[i]}`);
      }
      return true;
    });
  }

  /** The fill is done: complete at `position` (the log's entry there: `mark`); with `seen`, rows the fill did not write are removed. */
  async finishFill(position: number, mark: LogMark | undefined, seen?: Set<string>): Promise<void> {
    if (seen) {
      const gone: PersonKey[] = [];
      for (const key of this.rows.getKeys()) if (!seen.has(`${key[0]}\u0000${key[1]}`)) gone.push(key);
      await this.root.transaction(() => {
        for (const key of gone) void this.rows.remove(key);
      });
    }
    const s = this.meta.get('state')!;
    await this.meta.put('state', { ...s, position, mark, complete: true });
    await this.root.flushed;
  }

  /**
   * Applies a batch the change follower read with each person's current template (FollowedChange.current),
   * in one transaction with the new position: a template of `modelId` is kept, anything else (gone, another
   * model) removed. Resolves once committed.
   */
  async apply(batch: readonly FollowedChange[], modelId: string): Promise<void> {
    if (batch.length === 0) return;
    if (batch.some((c) => c.current === undefined)) throw new Error('gallery cache: a change without its current template');
    await this.root.transaction(() => {
      for (const c of batch) {
        const key: PersonKey = [c.accountId, c.personId];
        if (c.current && c.current.modelId === modelId) void this.rows.put(key, c.current.sealedTemplate);
        else void this.rows.remove(key);
      }
      const s = this.meta.get('state')!;
      const last = batch[batch.length - 1];
      if (last.seq > s.position) {
        void this.meta.put('state', { ...s, position: last.seq, mark: logMarkOf(last) });
      }
    });
  }

  /** The sealed rows of `personIds` in order (undefined where none), each handed to `open` before the next read. */
  read<T>(accountId: string, personIds: readonly string[], openRow: (personId: string, sealed: Uint8Array) => T): Array<T | undefined> {
    this.counted(personIds.length);
    const out = new Array<T | undefined>(personIds.length);
    for (let i = 0; i < personIds.length; i++) {
      // getBinaryFast hands out lmdb-js's reused read buffer (its `length` is the value's size): opened at once.
      const fast = this.rows.getBinaryFast([accountId, personIds[i]]);
      out[i] = fast ? openRow(personIds[i], fast.subarray(0, fast.length)) : undefined;
    }
    return out;
  }

  /**
   * A row that did not open is written again from the table (`fresh`: the table's row now; undefined: none of
   * the model), unless the follower changed it meanwhile (the row no longer holds `damaged`). Resolves with
   * whether it was written.
   */
  repair(accountId: string, personId: string, damaged: Uint8Array, fresh: Buffer | undefined): Promise<boolean> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const now = this.rows.getBinary(key);
      if (!now || !now.equals(damaged)) return false;
      if (fresh) void this.rows.put(key, fresh);
      else void this.rows.remove(key);
      return true;
    });
  }

  /** Every row in key order, in blocks of up to `size` rows of one account and one sealed length. */
  *blocks(size: number): Generator<CachedBlock> {
    let accountId = '';
    let ids: string[] = [];
    let parts: Buffer[] = [];
    const flush = (): CachedBlock => {
      const offsets = new Uint32Array(ids.length + 1);
      parts.forEach((p, i) => { offsets[i + 1] = offsets[i] + p.length; });
      const block = { accountId, ids, sealed: Buffer.concat(parts), offsets };
      ids = [];
      parts = [];
      return block;
    };
    for (const { key, value } of this.rows.getRange()) {
      if (ids.length > 0 && (key[0] !== accountId || value.length !== parts[0].length || ids.length >= size)) yield flush();
      this.counted(1);
      accountId = key[0];
      ids.push(key[1]);
      parts.push(value);
    }
    if (ids.length > 0) yield flush();
  }

  /** The map's pages leave this process's resident set (the page cache keeps them). */
  release(): void {
    this.readSinceRelease = 0;
    storageBinding()?.adviseMappedFile(this.dataFile, 'release');
  }

  private counted(rows: number): void {
    this.readSinceRelease += rows;
    if (this.readSinceRelease >= RELEASE_EVERY_ROWS) this.release();
  }

  count(): number {
    return this.rows.getCount();
  }

  /** Commits what is pending, syncs the file, closes, and marks the cache closed (cleanly). */
  async close(): Promise<void> {
    await this.root.flushed;
    const fd = fs.openSync(this.dataFile, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    await this.root.close();
    writeOpenMark(this.dir, { open: false, boot: bootId() });
  }
}

/** Whether the cache is open, and since which boot of the machine (a machine that went down leaves it open). */
interface OpenMark {
  open: boolean;
  boot: string;
}

const OPEN_MARK = 'open.json';

/** This boot of the machine ('' where the kernel does not say: any cache left open is then made anew). */
function bootId(): string {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
}

function readOpenMark(dir: string): OpenMark | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, OPEN_MARK), 'utf8')) as OpenMark;
  } catch {
    return undefined;
  }
}

/** Written and synced before the cache is used (open) or after it was synced and closed. */
function writeOpenMark(dir: string, mark: OpenMark): void {
  const file = path.join(dir, OPEN_MARK);
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(mark));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
