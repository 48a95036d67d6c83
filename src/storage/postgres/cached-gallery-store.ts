// The PostgreSQL store as a node's gallery follower sees it when the node keeps a gallery cache
// (./gallery-cache.ts): the same persons, change log and follower, with the cache kept in step underneath.
// - The start: when the cache is a complete copy of this database's templates of the model, at a position
//   the log still covers, the build reads the cache instead of the table and the follower replays the log
//   from the cache's position; otherwise the build copies the table as before, writing each block into the
//   cache as it goes to the index, and the cache stands at the log's last seq read before the copy.
// - Every batch the follower delivers is written to the cache before the galleries apply it.
// - A resync (the log pruned past the follower) copies the table again into the cache in place, then removes
//   the rows the copy did not see; searches meanwhile re-rank from rows the table held at some point.
// The galleries re-rank from templates(accountId): rows of the cache, opened with the data key. A row that does
// not open is left out of that search (a search never waits on the database), counted, and written again
// from the table in the background.
import crypto from 'node:crypto';

import { SEAL_OVERHEAD, SealError } from '../crypto/aead';
import { personPlaceParts } from '../crypto/sealer';
import { storageBinding } from '../native-storage';
import type { ChangeFollowerOptions } from './change-follower';
import { logMarkOf, type GalleryCache, type LogMark } from './gallery-cache';
import type { SealedBlockConsumer } from '../interfaces';
import { TEMPLATES_PLACE, type PgPersonRepository } from './persons';
import type { PostgresStore } from './store';

/** Rows per block handed to the index from the cache (as the table's copy hands them). */
const BLOCK = 1024;

/** The cache could not serve the start (a row that does not open, a damaged file): make it anew from the table. */
export class GalleryCacheError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(`gallery cache: ${message}`, options);
    this.name = 'GalleryCacheError';
  }
}

export interface CachedGalleryStore extends Pick<PostgresStore, 'changes' | 'followChanges'> {
  readonly persons: PgPersonRepository;
  /** The exact templates of `accountId`'s persons, from the cache (the galleries' re-rank). */
  templates(accountId: string): (personIds: readonly string[]) => Array<Float32Array | undefined>;
  /** Where the start's build came from, once it ran. */
  readonly startedFrom: 'cache' | 'database' | undefined;
  /**
   * The cache's position (and the log's entry there) when the cache is trusted: the follower resumes from it,
   * and index snapshots written at exactly this state may stand in for the cache's rows. Undefined: the
   * start copies the table.
   */
  readonly resumesFrom: { position: number; mark: LogMark | undefined } | undefined;
  /** Rows a search found damaged (left out, then written again from the table), since the start. */
  readonly rowFaults: number;
}

/**
 * What became of a damaged row: written again from the table; changed by the follower meanwhile; or left, as
 * the table holds the same bytes (the database's own row is damaged: a search leaves it out until it is
 * written again; no further repair is tried in this run).
 */
export type RowRepair = 'written' | 'changed' | 'same-in-table';

export interface CachedGalleryStoreOptions {
  /** A search found a row of `accountId` damaged (once per row at a time: a repair running is not started again). */
  onRowFault?: (fault: { accountId: string; repair: Promise<RowRepair> }) => void;
}

/** Rows whose table row was as damaged, remembered so searches do not ask the database again (bounded). */
const UNREPAIRABLE_KEPT = 10_000;

/**
 * `database`: the fingerprint of the store's database (galleryCacheIdentity). Call before the follower
 * starts: it decides whether the start's build reads the cache.
 */
export async function cachedGalleryStore(store: PostgresStore, cache: GalleryCache, modelId: string, database: string,
  options: CachedGalleryStoreOptions = {}): Promise<CachedGalleryStore> {
  // What openPostgresStore makes (the contract types it as any repository).
  const table = store.persons as PgPersonRepository;
  const usable = cache.usable(database, modelId);
  const fromCache = usable && await logStillLeadsTo(store.changes, usable.position, usable.mark) ? usable.position : undefined;
  let rowFaults = 0;
  const repairing = new Set<string>();
  const unrepairable = new Set<string>();
  let startedFrom: 'cache' | 'database' | undefined;
  let startPositionGiven = false;

  const changes = Object.create(store.changes) as PostgresStore['changes'];
  // The follower's start reads the position to follow from, then builds: from the cache's position when the
  // build reads the cache.
  changes.lastChange = async () => {
    if (fromCache !== undefined && !startPositionGiven) {
      startPositionGiven = true;
      return fromCache;
    }
    return store.changes.lastChange();
  };

  const persons = Object.create(table) as PgPersonRepository;
  persons.copyTemplates = async (model, onRows, options = {}) => {
    if (model !== modelId || !options.openSealed) throw new Error('gallery cache: the build must take sealed blocks of the cache\'s model');
    if (fromCache !== undefined && startedFrom === undefined) {
      startedFrom = 'cache';
      return fromCacheInto(options.openSealed);
    }
    startedFrom ??= 'database';
    const position = await store.changes.lastChange();
    const { entry } = await store.changes.entryAt(position);
    const keep = cache.holds(database, modelId);
    const seen = keep ? new Set<string>() : undefined;
    await cache.beginFill(database, modelId, keep);
    const openSealed = options.openSealed;
    // The cache holds only what comes sealed: a block handed over unsealed (a copy that could not open
    // natively) would leave it short while searches read it.
    let unsealed = false;
    const n = await table.copyTemplates(model, (rows) => { unsealed = true; onRows(rows); }, {
      ...options,
      openSealed: async (block) => {
        const [outcome] = await Promise.all([openSealed(block), cache.putBlock(block.accountId, block.ids, block.sealed, block.sealedOffsets, seen)]);
        return outcome;
      },
    });
    if (unsealed) throw new Error('gallery cache: the build took unsealed templates; start the node with [storage] gallery_cache = false');
    await cache.finishFill(position, entry && logMarkOf(entry), seen);
    cache.release();
    return n;
  };

  /** The start's build from the cache's rows, opened natively into the index (as the table's copy is). */
  async function fromCacheInto(openSealed: SealedBlockConsumer): Promise<number> {
    const key = table.dataKey!.export();
    // A scan of every row: under normal read-ahead, then random again (the map's advice at rest).
    storageBinding()?.adviseMappedFile(cache.dataFile, 'normal');
    try {
      let n = 0;
      for (const b of cache.blocks(BLOCK)) {
        const { prefix, suffix } = personPlaceParts(TEMPLATES_PLACE, b.accountId, modelId);
        const aads = b.ids.map((id) => Buffer.from(`${prefix}${JSON.stringify(id)}${suffix}`, 'utf8'));
        const aadOffsets = new Uint32Array(b.ids.length + 1);
        aads.forEach((a, i) => { aadOffsets[i + 1] = aadOffsets[i] + a.length; });
        const outcome = await openSealed({
          accountId: b.accountId, ids: b.ids, dimension: (b.offsets[1] - SEAL_OVERHEAD) / 4,
          sealed: b.sealed, sealedOffsets: b.offsets, aad: Buffer.concat(aads), aadOffsets, key,
        });
        if (outcome.failedRow >= 0) throw new GalleryCacheError(`a row of ${b.ids.length} did not open (${outcome.reason})`);
        n += b.ids.length;
      }
      return n;
    } catch (err) {
      throw err instanceof GalleryCacheError ? err : new GalleryCacheError('the start could not read it', { cause: err });
    } finally {
      key.fill(0);
      storageBinding()?.adviseMappedFile(cache.dataFile, 'random');
      cache.release();
    }
  }

  return {
    persons,
    changes,
    resumesFrom: fromCache !== undefined ? { position: fromCache, mark: usable!.mark } : undefined,
    get startedFrom() {
      return startedFrom;
    },
    get rowFaults() {
      return rowFaults;
    },
    followChanges: (options: Omit<ChangeFollowerOptions, 'settings'>) => store.followChanges({
      ...options,
      withTemplates: true,
      onChanges: async (batch) => {
        await cache.apply(batch, modelId);
        await options.onChanges(batch);
      },
    }),
    templates: (accountId) => (personIds) => cache.read(accountId, personIds, (personId, sealed) => {
      try {
        return table.openTemplate(accountId, personId, modelId, sealed);
      } catch (err) {
        // A damaged row answers as absent (the candidate is dropped) rather than failing every search.
        if (!(err instanceof SealError)) throw err;
        rowFaults++;
        const key = `${accountId}\u0000${personId}`;
        if (repairing.has(key) || unrepairable.has(key)) return undefined;
        repairing.add(key);
        const repair = repairRow(accountId, personId, key, Buffer.from(sealed)).finally(() => repairing.delete(key));
        options.onRowFault?.({ accountId, repair });
        return undefined;
      }
    }),
  };

  /** The person's row written again from the table's (none of the model: removed), unless the follower changed it meanwhile. */
  async function repairRow(accountId: string, personId: string, key: string, damaged: Buffer): Promise<RowRepair> {
    const fresh = await table.sealedTemplateOf(accountId, personId, modelId);
    if (fresh?.equals(damaged)) {
      if (unrepairable.size < UNREPAIRABLE_KEPT) unrepairable.add(key);
      return 'same-in-table';
    }
    return await cache.repair(accountId, personId, damaged, fresh) ? 'written' : 'changed';
  }
}

/**
 * Whether following the log from `position` leads from the cache's rows to the database's state: the
 * database reached the position, the log still holds every change after it, and the entry at it is the one
 * the cache saw (`mark`). A database restored from a backup draws the seqs after the backup again, so its
 * entry at a later position names another change. An entry pruned away is trusted only at the prune horizon
 * itself: that database holds every change up to it. Position 0 is trusted only where the log never held an
 * entry, and a cache written before marks were kept is copied again once.
 */
async function logStillLeadsTo(changes: PostgresStore['changes'], position: number, mark: LogMark | undefined): Promise<boolean> {
  const last = await changes.lastChange();
  if (position > last) return false;
  if (position === 0) return last === 0;
  const { entry, horizon } = await changes.entryAt(position);
  if (position < horizon) return false;
  if (!entry) return position === horizon;
  return mark !== undefined && entry.seq === mark.seq && entry.accountId === mark.accountId
    && entry.personId === mark.personId && entry.at === mark.at;
}

/**
 * The fingerprint a cache names its database by: a hash of a key derived from the database's data key, so a
 * new database (a new data key) never uses a cache of another, and the fingerprint reveals nothing of the key.
 */
export function galleryCacheIdentity(store: Pick<PostgresStore, 'deriveKey'>): string {
  const raw = store.deriveKey('gallery cache identity', Buffer.from('face-check gallery cache')).export();
  try {
    return crypto.createHash('sha256').update(raw).digest('hex');
  } finally {
    raw.fill(0);
  }
}
