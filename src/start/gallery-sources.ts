// Where a node's galleries come from, per storage backend: the one part of the start (./server.ts) that
// differs. LMDB restores them from their snapshots (else from the store), applies its own commits through
// its change log (matching/local-gallery-feed.ts) and writes snapshots while it serves; PostgreSQL builds
// them from the persons table (or from the node's gallery cache, which the follower keeps in step: the index
// then holds int8 codes only and re-ranks from the cache; or from the index snapshots its last orderly stop
// wrote beside the cache, matching/snapshot/node-snapshots.ts) and follows the shared change log
// (matching/gallery-follower.ts), and its nodes share the cluster's housekeeping.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/types';
import { ThrottleRules } from '../accounts/sign-in-throttle';
import { Galleries } from '../matching/galleries';
import { GalleryFollower } from '../matching/gallery-follower';
import { LocalGalleryFeed } from '../matching/local-gallery-feed';
import {
  discardNodeSnapshots, forgetNodeSnapshots, nodeSnapshotPlace, restoreNodeSnapshots, writeNodeSnapshots, type NodeSnapshotRestore,
} from '../matching/snapshot/node-snapshots';
import { snapshotPlaceOf, type SnapshotPlace } from '../matching/snapshot/place';
import type { RestoreOptions, RestoreReport } from '../matching/snapshot/restore';
import { SnapshotScheduler } from '../matching/snapshot/scheduler';
import { SnapshotAbandoned } from '../matching/snapshot/write';
import { snapshotImportsForStart } from './early-start';
import type { GalleryCacheMetricsSource } from '../ops/metrics';
import type { GalleryFeed } from '../services/context';
import { StoreBusyError } from '../storage/errors';
import { lockStore, type StoreLock } from '../storage/lmdb/process-lock';
import type { Store } from '../storage/lmdb/store';
import {
  cachedGalleryStore, GalleryCacheError, galleryCacheIdentity, type CachedGalleryStore, type CachedGalleryStoreOptions, type RowRepair,
} from '../storage/postgres/cached-gallery-store';
import { GALLERY_CACHE_DIR, GalleryCache } from '../storage/postgres/gallery-cache';
import { chooseTemplateUnsealer } from '../storage/postgres/copy-unsealer';
import { clusterHousekeeping, type ClusterHousekeeping } from '../storage/postgres/cluster-housekeeping';
import type { PostgresStore } from '../storage/postgres/store';

export interface GallerySource {
  readonly galleries: Galleries;
  readonly feed: GalleryFeed;
  /** Loads the galleries of `modelId` (called again when the engine's model is not the one expected). */
  load(modelId: string): Promise<{ loaded: number; stale: number; summary: object }>;
  /** Once the node serves: LMDB writes its snapshots, PostgreSQL its share of the housekeeping. */
  begin(log: FastifyBaseLogger): void;
  /** After the drain: what begin started ends (LMDB's last snapshots written), then the galleries close. */
  stop(): Promise<void>;
  /** A PostgreSQL node's gallery cache, when it keeps one (for the metrics). */
  readonly galleryCache?: GalleryCacheMetricsSource;
}

/** Log lines of damaged cache rows per run: past them the metric alone counts. */
const ROW_FAULT_LOG_LINES = 20;
const ROW_REPAIR_WORDS: Record<RowRepair, string> = {
  written: 'written again from the table',
  changed: 'changed meanwhile',
  'same-in-table': 'the persons table holds the same damaged value: left out of searches until the person is written again',
};

/** The start's gallery outcome for the log: counts and reasons, never a person. */
function restoreSummary(r: RestoreReport): object {
  const reasons: Record<string, number> = {};
  for (const a of r.accounts) if (a.reason) reasons[a.reason] = (reasons[a.reason] ?? 0) + 1;
  return {
    persons: r.loaded,
    from_snapshot: r.accounts.filter((a) => a.source === 'snapshot').length,
    rebuilt: r.accounts.filter((a) => a.source === 'rebuild').length,
    replayed: r.accounts.reduce((n, a) => n + a.replayed, 0),
    opened_early: r.accounts.filter((a) => a.early).length,
    ...(r.earlySkipped ? { not_opened_early: r.earlySkipped } : {}),
    ms: Math.round(r.timings.total),
    ...(Object.keys(reasons).length ? { rebuild_reasons: reasons } : {}),
  };
}

export function lmdbGallerySource(store: Store, config: Config): GallerySource {
  const { persons } = store;
  const galleries = Galleries.forStore(persons);
  const place = config.index.snapshot ? snapshotPlaceOf(store) : undefined;
  // Snapshots the start opened early (under `face-check serve`) serve the first load only.
  let early: RestoreOptions | undefined = { early: snapshotImportsForStart(config.storage.path) };
  let restored: RestoreReport | undefined;
  let feed: LocalGalleryFeed | undefined;
  let modelId = '';
  let snapshots: SnapshotScheduler | undefined;
  return {
    galleries,
    get feed() {
      return feed!;
    },
    async load(model) {
      restored = await galleries.restore(persons, model, place, early);
      early = undefined;
      modelId = model;
      // The store's own commits reach the galleries through its change log, as a PostgreSQL node's do.
      feed = new LocalGalleryFeed(galleries, persons, model);
      return { loaded: restored.loaded, stale: restored.stale, summary: restoreSummary(restored) };
    },
    begin(log) {
      // Writes the snapshots (when [index] snapshot is on) and keeps the change log bounded either way.
      snapshots = new SnapshotScheduler({
        galleries, persons, modelId, place, log,
        // A snapshot is taken under the account's lock with every committed change in its gallery.
        exclusive: (accountId, fn) => store.exclusive(accountId, async () => { await feed!.catchUp(); return fn(); }),
        settings: {
          intervalS: config.index.snapshot_interval_s, minChanges: config.index.snapshot_min_changes,
          stopTimeoutS: config.index.snapshot_stop_timeout_s, changeLogKeep: config.index.change_log_keep,
        },
      });
      snapshots.begin(restored!);
    },
    async stop() {
      // No request runs any more: the changed accounts' snapshots are written (bounded by snapshot_stop_timeout_s).
      await snapshots?.stop();
      galleries.close();
    },
  };
}

export function postgresGallerySource(store: PostgresStore, config: Config, log: () => FastifyBaseLogger | undefined): GallerySource {
  let follower: GalleryFollower | undefined;
  let housekeeping: ClusterHousekeeping | undefined;
  let cache: NodeGalleryCache | undefined;
  let cached: CachedGalleryStore | undefined;
  let snapshots: SnapshotPlace | undefined;
  let database = '';
  let model = '';
  let faultLines = 0;
  const onRowFault: CachedGalleryStoreOptions['onRowFault'] = ({ accountId, repair }) => {
    if (faultLines >= ROW_FAULT_LOG_LINES) return;
    const last = ++faultLines === ROW_FAULT_LOG_LINES;
    // The account, never the person (nor the seal's error, which names the record): person ids are the
    // integrator's and may name someone.
    void repair.then(
      (outcome) => log()?.warn({ account: accountId, repair: outcome },
        `gallery cache: a row did not open (damaged) and was left out of a search; ${ROW_REPAIR_WORDS[outcome]}${last ? ' (further ones are counted in face_check_gallery_cache_row_faults_total only)' : ''}`),
      (repairErr) => log()?.warn({ account: accountId, repair_error: repairErr },
        'gallery cache: a row did not open and was left out of a search; writing it again failed (the next change or start does)'));
  };
  const follow = async (modelId: string, cached?: CachedGalleryStore, restore?: (galleries: Galleries) => Promise<number | undefined>) => {
    follower = new GalleryFollower(cached ?? store, {
      modelId,
      // A request waits for the galleries no longer than for a statement: past it, 503 as for the database.
      waitTimeoutMs: config.storage.postgres_statement_timeout_ms,
      onError: (err) => log()?.warn({ err }, 'change follower: retrying'),
      templates: cached?.templates,
      restore,
    });
    return follower.start();
  };
  /**
   * The start's build from the index snapshots the last stop wrote, when the cache is trusted at their state;
   * the set is forgotten either way before the follower applies a change.
   */
  const snapshotRestore = (modelId: string, outcome: { restored?: NodeSnapshotRestore }) => {
    const resumes = cached!.resumesFrom;
    if (!snapshots) return undefined;
    if (!resumes) {
      forgetNodeSnapshots(snapshots);
      return undefined;
    }
    return async (galleries: Galleries) => {
      outcome.restored = await restoreNodeSnapshots(galleries, snapshots!, { database, modelId, ...resumes });
      return 'loaded' in outcome.restored ? outcome.restored.loaded : undefined;
    };
  };
  return {
    get galleries() {
      return follower!.galleries;
    },
    get feed() {
      return follower!;
    },
    get galleryCache() {
      return cached && { rowFaults: () => cached!.rowFaults };
    },
    async load(modelId) {
      await follower?.stop();
      if (!config.storage.gallery_cache || chooseTemplateUnsealer() !== 'native') {
        const { loaded, stale } = await follow(modelId);
        return { loaded, stale, summary: { persons: loaded, stale, change_position: follower!.position } };
      }
      cache ??= openNodeGalleryCache(config.storage.path, log);
      database = galleryCacheIdentity(store);
      model = modelId;
      // A cache kept for this run only keeps no snapshots either; with snapshots off, those of earlier runs go.
      const place = cache.temporary ? undefined : nodeSnapshotPlace(cache.dir, (purpose, salt) => store.deriveKey(purpose, salt));
      snapshots = config.index.snapshot ? place : undefined;
      if (place && !snapshots) discardNodeSnapshots(place);
      cached = await cachedGalleryStore(store, cache.cache, modelId, database, { onRowFault });
      const outcome: { restored?: NodeSnapshotRestore } = {};
      let counts: { loaded: number; stale: number };
      try {
        counts = await follow(modelId, cached, snapshotRestore(modelId, outcome));
      } catch (err) {
        if (!(err instanceof GalleryCacheError)) throw err;
        // A damaged cache: made anew from the table.
        log()?.warn({ err }, 'gallery cache: unusable, copying the persons table again');
        await follower?.stop();
        await cache.cache.beginFill(database, modelId, false);
        cached = await cachedGalleryStore(store, cache.cache, modelId, database, { onRowFault });
        counts = await follow(modelId, cached);
      }
      const { loaded, stale } = counts;
      const { restored } = outcome;
      const fromSnapshots = restored !== undefined && 'loaded' in restored;
      return {
        loaded, stale, summary: {
          persons: loaded, stale, change_position: follower!.position, gallery_cache: fromSnapshots ? 'cache' : cached.startedFrom,
          ...(restored ? { index_snapshots: 'reason' in restored ? restored.reason : 'used' } : {}),
        },
      };
    },
    begin() {
      // Change-log pruning and session purges for the cluster: one node at a time does them.
      housekeeping = clusterHousekeeping(store.pool, config, new ThrottleRules(config.accounts).retentionMs, log);
      housekeeping.start();
    },
    async stop() {
      if (snapshots && follower && cache) await writeSnapshotsAtStop(follower, cache.cache, snapshots);
      await follower?.stop();
      await housekeeping?.stop();
      await cache?.close();
    },
  };

  /**
   * The follower halted, the galleries' codes are written for the next start when they stand where the cache
   * does (bounded by [index] snapshot_stop_timeout_s; past it or on a failure the next start reads the rows).
   */
  async function writeSnapshotsAtStop(follower: GalleryFollower, cache: GalleryCache, place: SnapshotPlace): Promise<void> {
    const t0 = performance.now();
    try {
      // A stop during the start's build: the galleries may be partly filled. (No set is there to forget:
      // every start removes the one it found.)
      const following = follower.status() !== undefined;
      await follower.halt();
      const state = cache.usable(database, model);
      if (!following || !state || state.position !== follower.position) {
        log()?.warn({ cache_position: state?.position, galleries_position: follower.position },
          'index snapshots not written: the galleries do not stand where the gallery cache does (the next start reads its rows)');
        return;
      }
      if (config.index.snapshot_stop_timeout_s === 0) return;
      const deadline = t0 + config.index.snapshot_stop_timeout_s * 1000;
      const written = await writeNodeSnapshots(follower.galleries, place, { database, modelId: model, ...state }, () => performance.now() >= deadline);
      log()?.info({ ...written, ms: Math.round(performance.now() - t0) }, 'index snapshots written for the next start');
    } catch (err) {
      log()?.warn(err instanceof SnapshotAbandoned ? {} : { err }, err instanceof SnapshotAbandoned
        ? 'index snapshots abandoned at the stop deadline ([index] snapshot_stop_timeout_s): the next start reads the gallery cache\'s rows'
        : 'index snapshots not written (the next start reads the gallery cache\'s rows)');
    }
  }
}

interface NodeGalleryCache {
  readonly cache: GalleryCache;
  readonly dir: string;
  /** Another process holds the kept cache: this one is for this run only. */
  readonly temporary: boolean;
  close(): Promise<void>;
}

/**
 * The node's gallery cache in <storage path>/gallery-cache, held by this process (its lock). A second node
 * started on the same path gets a cache of its own for this run only, in a temporary folder.
 */
function openNodeGalleryCache(storagePath: string, log: () => FastifyBaseLogger | undefined): NodeGalleryCache {
  let dir = path.join(storagePath, GALLERY_CACHE_DIR);
  let temporary = false;
  let lock: StoreLock;
  try {
    lock = lockStore(dir, 'gallery cache');
  } catch (err) {
    if (!(err instanceof StoreBusyError)) throw err;
    log()?.warn({ dir, owner: err.owner.pid }, 'gallery cache: held by another process; this run keeps its own, not kept');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-gallery-cache-'));
    temporary = true;
    lock = lockStore(dir, 'gallery cache');
  }
  const { cache, damaged } = GalleryCache.open(dir);
  if (damaged) log()?.warn({ dir }, 'gallery cache: unreadable, made anew');
  return {
    cache,
    dir,
    temporary,
    async close() {
      await cache.close();
      lock.release();
      if (temporary) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
