// Snapshots imported before the store is open. A start spends most of its first 100 ms loading modules on
// one core; the snapshot's import (reading, AES-256-GCM, row checks, key map) needs only the addon, the file
// and its key. Each snapshot's header carries the store's data key as the key file wraps it (the `meta`
// value), so `face-check serve` opens the key file and begins each import into a collection of its own
// right after reading the ini (src/start/early-start.ts), while the rest of the program loads.
//
// Nothing is trusted for being early: the restore (./restore.ts) takes an import only for the very file it
// checked against the store (same inode, same header block, so the same salt, sequence and chunks) and only
// when the key it was opened with equals the key the open store derives for that file; otherwise it frees
// the import and reads the file itself. Until then the import's rows are in no gallery. Whatever is not
// taken is freed when the restore ends.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { similarityIndex, type Collection, type SealedImportResult } from '../../similarity-index/similarity-index';
import { readKeyFile } from '../../storage/crypto/key-file';
import { deriveFileKey, unwrapDataKey } from '../../storage/crypto/key-wrap';
import { KEY_PURPOSE } from './format';
import { SNAPSHOT_FOLDER, SNAPSHOT_SUFFIX } from './place';
import { startSnapshotReadAhead } from './read-ahead';
import { chooseUnsealer, closeSnapshot, openSnapshot, sealedJob, type OpenSnapshot } from './read';

export interface EarlyImportSettings {
  /** The snapshot folder (SnapshotPlace.dir). */
  dir: string;
  /** The key file that unwraps the store's data key ([storage] key_file, resolved). */
  keyFile: string;
  /** The model whose snapshots are wanted (the models' manifest): other models' files are not read. */
  modelId: string;
  /** Native threads per import (default: earlyThreads() of the snapshots' size). */
  threads?: number;
  /** Snapshots imported early at most, the largest (default MAX_EARLY). */
  maxImports?: number;
}

/** One snapshot's import, begun early. */
export interface EarlyImport {
  readonly accountId: string;
  /** The file key it was opened with: compared with the store's before the rows are used. */
  readonly key: Buffer;
  /** The rows, in a collection no gallery uses until one adopts it. */
  readonly collection: Collection;
  /** Settles when the import has (rejecting as Collection.importSealed does). */
  readonly result: Promise<SealedImportResult>;
  /** Waits for the import to settle, then frees its rows and its key. */
  discard(): Promise<void>;
}

interface Begun extends EarlyImport {
  block: Buffer;
  dev: number;
  ino: number;
}

export class EarlySnapshotImports {
  private readonly begun = new Map<string, Begun>();
  /** Why no import was begun, when none was (for the start's log). */
  skipped: string | undefined;

  /** Imports begun and not taken yet. */
  get size(): number {
    return this.begun.size;
  }

  /**
   * Begins an import of every snapshot in the folder that carries a key wrap the key file opens and is of
   * `modelId`. Never throws: what cannot be begun is left to the restore, which reports why.
   */
  static begin(settings: EarlyImportSettings): EarlySnapshotImports {
    const imports = new EarlySnapshotImports();
    try {
      imports.skipped = imports.beginAll(settings);
    } catch (err) {
      imports.skipped = (err as Error).message;
    }
    return imports;
  }

  /**
   * The import begun for `accountId` if it read this very file (`snapshot`, opened by the restore); it is
   * handed out once. An import of another file is freed and undefined returned.
   */
  take(accountId: string, snapshot: OpenSnapshot): EarlyImport | undefined {
    const early = this.begun.get(accountId);
    if (!early) return undefined;
    this.begun.delete(accountId);
    const stat = fs.fstatSync(snapshot.fd);
    if (stat.dev !== early.dev || stat.ino !== early.ino || !snapshot.block.equals(early.block)) {
      void early.discard();
      return undefined;
    }
    return early;
  }

  /** Frees every import not taken (once each has settled). */
  async discardRest(): Promise<void> {
    const rest = [...this.begun.values()];
    this.begun.clear();
    await Promise.all(rest.map((e) => e.discard()));
  }

  /** Why nothing was begun, only when there are snapshots (a store without any is not worth a word). */
  private beginAll(settings: EarlyImportSettings): string | undefined {
    let names: string[];
    try {
      names = fs.readdirSync(settings.dir).filter((n) => n.endsWith(SNAPSHOT_SUFFIX));
    } catch {
      return undefined;
    }
    if (names.length === 0) return undefined;
    if (chooseUnsealer() !== 'native') return 'snapshots are unsealed in JavaScript here';
    const kek = readKeyFile(settings.keyFile);
    if (!kek) return 'no key file';
    const dataKeys = new Map<string, Buffer | undefined>();  // by wrap: every file of one store carries the same
    const sized = names.map((name) => ({ file: path.join(settings.dir, name), bytes: sizeOf(path.join(settings.dir, name)) }));
    const threads = settings.threads ?? earlyThreads(sized.reduce((n, f) => n + f.bytes, 0));
    // The largest first, at most MAX_EARLY: each holds a descriptor until its import settles.
    const files = sized.sort((a, b) => b.bytes - a.bytes).slice(0, settings.maxImports ?? MAX_EARLY).map((f) => f.file);
    try {
      for (const file of files) this.beginOne(file, threads, settings.modelId, kek, dataKeys);
    } finally {
      kek.fill(0);
      for (const key of dataKeys.values()) key?.fill(0);
    }
    return this.begun.size === 0 ? 'no snapshot with a key wrap the key file opens' : undefined;
  }

  private beginOne(file: string, threads: number, modelId: string, kek: Buffer, dataKeys: Map<string, Buffer | undefined>): void {
    let snapshot: OpenSnapshot | undefined;
    try {
      snapshot = openSnapshot(file);
    } catch {
      return;  // damaged: the restore finds it again and says why
    }
    if (!snapshot) return;
    const { header } = snapshot;
    const wrap = header.keyWrap;
    if (header.modelId !== modelId || !wrap || this.begun.has(header.accountId)) {
      closeSnapshot(snapshot);
      return;
    }
    if (!dataKeys.has(wrap)) dataKeys.set(wrap, unwrapDataKey(kek, Buffer.from(wrap, 'base64')));
    const dataKey = dataKeys.get(wrap);
    if (!dataKey) {
      closeSnapshot(snapshot);
      return;
    }
    const key = deriveFileKey(dataKey, KEY_PURPOSE, Buffer.from(header.salt, 'base64'));
    const stat = fs.fstatSync(snapshot.fd);
    const name = `early-snapshot/${crypto.randomUUID()}/${header.accountId}`;
    const index = similarityIndex();
    let collection: Collection;
    let result: Promise<SealedImportResult>;
    try {
      collection = index.createCollection(name, header.dim, { vectors: false });
      result = collection.importSealed(sealedJob(snapshot, key), { threads });
    } catch {
      index.dropCollection(name);
      key.fill(0);
      closeSnapshot(snapshot);
      return;
    }
    const open = snapshot;
    const settled = result.then(() => undefined, () => undefined).finally(() => closeSnapshot(open));
    let discarded: Promise<void> | undefined;
    this.begun.set(header.accountId, {
      accountId: header.accountId, key, collection, result, block: snapshot.block, dev: stat.dev, ino: stat.ino,
      discard: () => (discarded ??= settled.then(() => {
        index.dropCollection(name);
        key.fill(0);
      })),
    });
  }
}

/**
 * Snapshots together smaller than this are imported early on every core but one: the main thread is loading
 * the program meanwhile, and an import of about that much work finishes as soon without it and without the
 * two fighting for the cores (measured side by side: docs/benchmarks.md). Larger ones outlast the load by far
 * and take every core.
 */
const SHARE_CORES_BELOW = 128 << 20;

/** Native threads for early imports of `bytes` in all: every core but one for small snapshots, else 0 (every core). */
function earlyThreads(bytes: number): number {
  return bytes < SHARE_CORES_BELOW ? Math.max(1, os.availableParallelism() - 1) : 0;
}

/** Snapshots imported early at most (the largest); the others are read once the store is open, as before. */
const MAX_EARLY = 64;

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;  // gone meanwhile
  }
}

/**
 * What a start does for the snapshots of the store at `storagePath` before anything else is loaded: begins
 * their imports, else, where none could begin (files of an older version, no native unsealing), has the
 * kernel read the files ahead (./read-ahead.ts).
 */
export function beginSnapshotStart(storagePath: string, keyFile: string, modelId: string): EarlySnapshotImports {
  const imports = EarlySnapshotImports.begin({ dir: path.join(storagePath, SNAPSHOT_FOLDER), keyFile, modelId });
  if (imports.size === 0) startSnapshotReadAhead(storagePath);
  return imports;
}
