// Start-up of the galleries from their snapshots (docs/index-snapshot.md). Per account holding templates of
// the running model:
//   1. its snapshot's header: same account, model and index layout, intact, of this store's history, and the
//      change log still holds what came after it (or the account did not change since);
//   2. its rows: read and opened natively straight into the index (Collection.importSealed, where the
//      process's OpenSSL is reachable), else in JavaScript and imported group by group as they open;
//   3. the account's changes after the snapshot's sequence, replayed from the store's current state (upsert
//      when the person exists with this model, remove otherwise: idempotent);
//   4. the gallery must then hold exactly the account's templates of the model (the store's count).
// Any failure (no file, torn, cut, another model, layout or store, a chunk that does not open, a count that
// differs, too many changes to replay) drops what was loaded and rebuilds the account from the store's
// segments, as a start without snapshots does.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { IndexError, type SealedImportResult } from '../../similarity-index/similarity-index';
import type { LocalPersonRepository as PersonRepository } from '../../storage/interfaces';
import type { WorkerPool } from '../../threads/worker-pool';
import type { Gallery } from '../gallery';
import { IndexGallery } from '../index-gallery';
import type { EarlyImport, EarlySnapshotImports } from './early-import';
import { chooseUnsealer, closeSnapshot, openSnapshot, readGroups, sealedJob, type OpenSnapshot, type ReadTimings, type Unsealer } from './read';
import { snapshotFileName, type SnapshotPlace } from './place';
import { groupError, unsealPool } from './unseal';
import { removeStaleTemps } from './write';

export { chooseUnsealer, type Unsealer } from './read';

/** Changes of an account replayed at most before its rebuild is preferred (see step 3), whatever its size. */
const REPLAY_AT_MOST = 4096;

/**
 * Snapshots together larger than this are unsealed by worker threads; smaller ones on the main thread while
 * the index imports on its own: below it, that took less CPU than two workers (each costs its boot) for the
 * same time to the first answer (measured side by side; figures: docs/benchmarks.md).
 */
const POOL_THRESHOLD = 128 << 20;

/** What a restore needs of the galleries (src/matching/galleries.ts), so the two files do not import each other. */
export interface RestoreTarget {
  readonly importsCodes: boolean;
  of(accountId: string): Gallery;
  codeLayout(): Promise<string | undefined>;
  rebuildAccounts(persons: PersonRepository, modelId: string, accountIds: readonly string[]): Promise<number>;
  close(): void;
}

export interface AccountRestore {
  accountId: string;
  /** Where the gallery came from. */
  source: 'snapshot' | 'rebuild';
  /** Why the snapshot was not used (absent when it was). */
  reason?: string;
  /** The snapshot's sequence (0 when rebuilt: the whole log is after it). */
  seq: number;
  /** Changes replayed after the snapshot. */
  replayed: number;
  /** Whether the snapshot's rows came from its import begun before the store opened (./early-import.ts). */
  early?: boolean;
  size: number;
}

export interface RestoreReport {
  loaded: number;
  /** Persons whose template belongs to another model (not loaded: face-check reindex). */
  stale: number;
  accounts: AccountRestore[];
  /**
   * Wall time of each step (ms); read, unseal and keys are busy times summed over threads, overlapping with
   * import (natively: within it; keys is the native key map's).
   */
  timings: { headers: number; read: number; unseal: number; keys: number; import: number; replay: number; rebuild: number; check: number; total: number };
  /** Unsealed snapshot bytes. */
  bytes: number;
  /** Threads that unsealed: native threads, or worker threads of the JavaScript path (0: its main thread). */
  workers: number;
  unsealer: Unsealer;
  /** Why no snapshot import could begin before the store opened, when one was tried and none could. */
  earlySkipped?: string;
}

export interface RestoreOptions {
  /** Threads unsealing large snapshots; default: one per core (at most 4); 0: none, this thread unseals. */
  workers?: number;
  /** Snapshots together larger than this are unsealed by the workers (default 128 MiB; tests: 0). */
  poolAboveBytes?: number;
  /** Chunks per import (default GROUP_CHUNKS; tests: smaller, for several groups from few rows). */
  groupChunks?: number;
  /** Who unseals (default: FACE_CHECK_SNAPSHOT_UNSEAL=js|native, else native where available). */
  unseal?: Unsealer;
  /** Native threads (default 0: every core). */
  threads?: number;
  /** Snapshot imports begun before the store opened: used where they read the same file with the store's key. */
  early?: EarlySnapshotImports;
}

/** Restores every account's gallery of `modelId`; see the file comment. */
export async function restoreGalleries(galleries: RestoreTarget, persons: PersonRepository, modelId: string,
  place: SnapshotPlace | undefined, options: RestoreOptions = {}): Promise<RestoreReport> {
  const t0 = performance.now();
  galleries.close();
  const timings = { headers: 0, read: 0, unseal: 0, keys: 0, import: 0, replay: 0, rebuild: 0, check: 0, total: 0 };
  const io: ReadTimings = { readMs: 0, unsealMs: 0, bytes: 0 };
  const unsealer = place && galleries.importsCodes ? chooseUnsealer(options.unseal) : 'js';
  // JavaScript: workers take a while to boot: started first, from the folder's size, so they are up when the
  // headers are read. Natively no worker is needed.
  let workers = unsealer === 'js' && place && galleries.importsCodes && options.workers !== 0 && folderBytes(place.dir) > (options.poolAboveBytes ?? POOL_THRESHOLD)
    ? Math.max(1, Math.min(options.workers ?? os.availableParallelism(), 4)) : 0;
  const pool = workers > 0 ? unsealPool(workers) : undefined;
  let results: Map<string, AccountRestore>;
  try {
    const native = unsealer === 'native' ? { threads: options.threads ?? 0, used: 0 } : undefined;
    results = await loadSnapshots(galleries, persons, modelId, place, pool, native, timings, io, options);
    if (native) workers = native.used;
  } finally {
    void pool?.close();
    await options.early?.discardRest();
  }
  timings.read = io.readMs;
  timings.unseal = io.unsealMs;

  // 3. Replay the changes after each loaded snapshot.
  let t = performance.now();
  const loadedFromSnapshot = [...results.values()].filter((r) => r.source === 'snapshot');
  if (loadedFromSnapshot.length) {
    const from = loadedFromSnapshot.reduce((m, r) => Math.min(m, r.seq), Infinity);
    const pending = new Map<string, Set<string>>();
    for (const change of persons.changes.changesSince(from)) {
      const r = results.get(change.accountId);
      if (!r || r.source !== 'snapshot' || change.seq <= r.seq) continue;
      let ids = pending.get(change.accountId);
      if (!ids) pending.set(change.accountId, (ids = new Set()));
      ids.add(change.personId);
    }
    for (const [accountId, ids] of pending) {
      const r = results.get(accountId)!;
      // Replaying reads one sealed row per person: past a quarter of the account, the segments are faster.
      if (ids.size > Math.max(REPLAY_AT_MOST, galleries.of(accountId).size / 4)) {
        r.source = 'rebuild';
        r.reason = `${ids.size} persons changed since the snapshot`;
        continue;
      }
      try {
        r.replayed = await replay(galleries.of(accountId), persons, modelId, accountId, [...ids]);
      } catch (err) {
        r.source = 'rebuild';
        r.reason = `replay failed: ${(err as Error).message}`;
      }
    }
  }
  timings.replay = performance.now() - t;

  // 4. The count check of every snapshot-loaded account, then the rebuild of the rest.
  t = performance.now();
  for (const r of loadedFromSnapshot) {
    if (r.source !== 'snapshot') continue;
    const expected = persons.templateCount(modelId, r.accountId);
    const size = galleries.of(r.accountId).size;
    if (size !== expected) {
      r.source = 'rebuild';
      r.reason = `snapshot and changes give ${size} persons, the store holds ${expected}`;
    }
  }
  timings.check = performance.now() - t;
  t = performance.now();
  const rebuild = [...results.values()].filter((r) => r.source === 'rebuild').map((r) => r.accountId);
  if (rebuild.length) await galleries.rebuildAccounts(persons, modelId, rebuild);
  timings.rebuild = performance.now() - t;

  let loaded = 0;
  for (const r of results.values()) {
    r.size = galleries.of(r.accountId).size;
    loaded += r.size;
  }
  timings.total = performance.now() - t0;
  const earlySkipped = options.early?.skipped;
  return {
    loaded, stale: persons.count() - loaded, accounts: [...results.values()], timings, bytes: io.bytes, workers, unsealer,
    ...(earlySkipped ? { earlySkipped } : {}),
  };
}

/** Steps 1 and 2: every account of the model, loaded from its snapshot where one fits. */
async function loadSnapshots(galleries: RestoreTarget, persons: PersonRepository, modelId: string, place: SnapshotPlace | undefined,
  pool: WorkerPool | undefined, native: { threads: number; used: number } | undefined, timings: RestoreReport['timings'], io: ReadTimings,
  options: RestoreOptions): Promise<Map<string, AccountRestore>> {
  const accounts = persons.accountsWithTemplates(modelId);
  const results = new Map<string, AccountRestore>(accounts.map((accountId) => [accountId, { accountId, source: 'rebuild', seq: 0, replayed: 0, size: 0 }]));

  // 1. Headers: which snapshots fit.
  let t = performance.now();
  const usable = new Map<string, OpenSnapshot>();
  if (place && galleries.importsCodes) {
    removeStaleTemps(place.dir);
    const layout = await galleries.codeLayout();
    for (const accountId of accounts) {
      const r = results.get(accountId)!;
      try {
        const snapshot = openSnapshot(path.join(place.dir, snapshotFileName(accountId)));
        if (!snapshot) {
          r.reason = 'no snapshot';
          continue;
        }
        const why = unfit(snapshot, accountId, modelId, layout, persons);
        if (why) {
          r.reason = why;
          closeSnapshot(snapshot);
          continue;
        }
        usable.set(accountId, snapshot);
      } catch (err) {
        r.reason = (err as Error).message;
      }
    }
  } else {
    for (const r of results.values()) r.reason = place ? 'gallery cannot import snapshots' : 'snapshots off';
  }
  timings.headers = performance.now() - t;

  // 2. Snapshots into the index: natively in one call, or group by group.
  t = performance.now();
  for (const [accountId, snapshot] of usable) {
    const r = results.get(accountId)!;
    const gallery = galleries.of(accountId) as IndexGallery;
    const { header } = snapshot;
    let first = true;
    try {
      if (native) {
        const early = options.early?.take(accountId, snapshot);
        if (early && await adoptEarly(gallery, early, snapshot, place!, native, timings, io)) r.early = true;
        else await importSealed(gallery, snapshot, place!, native, timings, io);
      } else {
        await readGroups(snapshot, place!.keyFor(Buffer.from(header.salt, 'base64')), pool, async (g) => {
          const ti = performance.now();
          const keys = Buffer.from(g.keys.buffer, g.keys.byteOffset, g.keys.byteLength).toString('utf8');
          await gallery.importCodes({ layout: header.layout, dim: header.dim, stride: header.stride, count: g.rows,
            keys, codes: g.codes, scales: g.scales, sums: g.sums }, { clear: first });
          first = false;
          timings.import += performance.now() - ti;
        }, io, options.groupChunks);
      }
      if (gallery.size !== header.count) throw new Error(`snapshot of ${header.count} rows loaded ${gallery.size}`);
      r.source = 'snapshot';
      r.seq = header.seq;
      delete r.reason;
    } catch (err) {
      r.reason = (err as Error).message;
      gallery.drop();
    } finally {
      closeSnapshot(snapshot);
    }
  }
  return results;
}

/** Step 2 natively: the whole snapshot read and opened into the gallery by Collection.importSealed. */
async function importSealed(gallery: IndexGallery, snapshot: OpenSnapshot, place: SnapshotPlace, native: { threads: number; used: number },
  timings: RestoreReport['timings'], io: ReadTimings): Promise<void> {
  const { header } = snapshot;
  const t = performance.now();
  const key = place.keyFor(Buffer.from(header.salt, 'base64')).export();
  try {
    countImport(await gallery.importSealed(header.dim, sealedJob(snapshot, key), { threads: native.threads }), snapshot, native, timings, io);
  } catch (err) {
    // The file's faults as the JavaScript reader reports them (SnapshotSealError, SnapshotFormatError).
    throw err instanceof IndexError && err.reason ? groupError(err.reason, err.message) : err;
  } finally {
    key.fill(0);
    timings.import += performance.now() - t;
  }
}

/** A native import's busy times and sizes, added to the restore's. */
function countImport(r: SealedImportResult, snapshot: OpenSnapshot, native: { threads: number; used: number },
  timings: RestoreReport['timings'], io: ReadTimings): void {
  io.readMs += r.readMs;
  io.unsealMs += r.openMs;
  timings.keys += r.keyMs;
  io.bytes += snapshot.header.chunks.reduce((n, b) => n + b, 0);
  native.used = Math.max(native.used, r.threads);
}

/**
 * Step 2 from an import begun before the store opened: only when it was opened with the key this store
 * derives for the file (else it is freed and false returned: the caller reads the file itself). Its faults
 * are the native import's.
 */
async function adoptEarly(gallery: IndexGallery, early: EarlyImport, snapshot: OpenSnapshot, place: SnapshotPlace,
  native: { threads: number; used: number }, timings: RestoreReport['timings'], io: ReadTimings): Promise<boolean> {
  const t = performance.now();
  const key = place.keyFor(Buffer.from(snapshot.header.salt, 'base64')).export();
  const same = key.length === early.key.length && crypto.timingSafeEqual(key, early.key);
  key.fill(0);
  early.key.fill(0);
  if (!same) {
    await early.discard();
    return false;
  }
  try {
    countImport(await early.result, snapshot, native, timings, io);
    gallery.adopt(early.collection);
    return true;
  } catch (err) {
    await early.discard();
    throw err instanceof IndexError && err.reason ? groupError(err.reason, err.message) : err;
  } finally {
    timings.import += performance.now() - t;
  }
}

/** Bytes of the snapshot files (0 when there is no folder). */
function folderBytes(dir: string): number {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  let n = 0;
  for (const name of names) {
    try {
      n += fs.statSync(path.join(dir, name)).size;
    } catch {
      // removed meanwhile
    }
  }
  return n;
}

/** Why the snapshot cannot be used, or undefined when it fits. */
function unfit(snapshot: OpenSnapshot, accountId: string, modelId: string, layout: string | undefined, persons: PersonRepository): string | undefined {
  const { header } = snapshot;
  if (header.accountId !== accountId) return 'snapshot of another account';
  if (header.modelId !== modelId) return 'snapshot of another model';
  if (header.layout !== layout) return `snapshot layout ${header.layout}, the index writes ${layout}`;
  const last = persons.changes.lastChange();
  if (header.seq > last) return `snapshot at change ${header.seq}, the store is at ${last} (another store or an older copy)`;
  const entry = header.seq > 0 ? persons.changes.at(header.seq) : undefined;
  if (entry && header.seqEntry && (entry.accountId !== header.seqEntry[0] || entry.personId !== header.seqEntry[1])) {
    return `the store's change ${header.seq} is not the snapshot's (an older copy of the store written to since)`;
  }
  if (persons.changes.accountHead(accountId) > header.seq && !persons.changes.covers(header.seq)) {
    return `snapshot at change ${header.seq} is older than the change log kept`;
  }
  return undefined;
}

/** Applies the current state of `ids` to the gallery; returns how many were replayed. */
export async function replay(gallery: Gallery, persons: PersonRepository, modelId: string, accountId: string,
  ids: string[]): Promise<number> {
  const current = persons.templatesOf(accountId, ids);
  const upserts: Array<{ id: string; template: Float32Array }> = [];
  for (let i = 0; i < ids.length; i++) {
    const meta = persons.meta(accountId, ids[i]);
    const template = current[i];
    if (meta && meta.modelId === modelId && template) upserts.push({ id: ids[i], template });
    else await gallery.remove(ids[i]);
  }
  if (upserts.length > 64 && gallery instanceof IndexGallery) {
    const dim = upserts[0].template.length;
    const data = new Float32Array(upserts.length * dim);
    upserts.forEach((u, i) => data.set(u.template, i * dim));
    await gallery.load(upserts.map((u) => u.id), data, dim, { clear: false });
  } else {
    for (const u of upserts) await gallery.upsert(u.id, u.template);
  }
  return ids.length;
}
