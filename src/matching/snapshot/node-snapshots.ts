// A PostgreSQL node's index snapshots. At an orderly stop, each gallery's int8 codes are written as a
// board's are (./write.ts: one sealed file per account), beside the node's gallery cache, and then a set
// file naming the cache state they reflect: database, model, the change position and the log's entry there,
// and each file's persons. The next start, when its cache is trusted at exactly that state, imports them
// instead of opening and re-quantising every cached row, and the follower replays the log from there as it
// would from the cache. The set file is removed as soon as a start has read it, before the follower applies
// anything (the cache then moves past the state it names): a crash never leaves a set that claims a state the
// cache has left, and a start without a set reads the cache's rows as before.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { IndexError } from '../../similarity-index/similarity-index';
import type { PersonChange } from '../../storage/interfaces';
import { syncFolder, writePrivateFileAtomically } from '../../storage/crypto/key-file';
import type { Galleries } from '../galleries';
import { IndexGallery } from '../index-gallery';
import { KEY_PURPOSE } from './format';
import { chooseUnsealer, closeSnapshot, openSnapshot, sealedJob, type OpenSnapshot } from './read';
import { snapshotFileName, SNAPSHOT_SUFFIX, type SnapshotPlace } from './place';
import { groupError } from './unseal';
import { discardSnapshots, removeStaleTemps, snapshotFolder, writeSnapshot } from './write';

/** The folder inside the gallery cache's. */
export const NODE_SNAPSHOT_FOLDER = 'index-snapshots';
/** The set file: written after every snapshot file, removed by the start that reads it. */
export const SNAPSHOT_SET = 'snapshot-set.json';
const SET_FORMAT = 1;

/** The gallery cache's state a set of snapshots reflects. */
export interface NodeSnapshotState {
  /** The database's fingerprint (galleryCacheIdentity). */
  database: string;
  modelId: string;
  /** The change the cache and the galleries stand at. */
  position: number;
  /** The log's entry at `position` (absent at 0). */
  mark: Pick<PersonChange, 'seq' | 'accountId' | 'personId' | 'at'> | undefined;
}

interface SnapshotSet extends Omit<NodeSnapshotState, 'mark'> {
  format: number;
  /** SHA-256 of the log's entry at `position` (markDigest): compared, and names no person on disk. */
  mark: string;
  layout: string;
  /** ISO 8601 time of writing (for operators). */
  written: string;
  files: Array<{ file: string; persons: number }>;
}

/** Where a node keeps them, and their key: derived from the database's data key, as a board's from its store's. */
export function nodeSnapshotPlace(cacheDir: string, deriveKey: (purpose: string, salt: Uint8Array) => crypto.KeyObject): SnapshotPlace {
  return { dir: path.join(cacheDir, NODE_SNAPSHOT_FOLDER), keyFor: (salt) => deriveKey(KEY_PURPOSE, salt) };
}

export interface NodeSnapshotsWritten {
  accounts: number;
  persons: number;
  bytes: number;
}

/**
 * Writes every non-empty gallery's snapshot at `state`, removes the files of accounts no longer held, then
 * the set file. The galleries must stand at `state` and not change meanwhile (the follower halted).
 * `abandoned` is checked between chunks: a write abandoned or failed leaves no set (the next start reads the
 * cache's rows).
 */
export async function writeNodeSnapshots(galleries: Galleries, place: SnapshotPlace, state: NodeSnapshotState,
  abandoned?: () => boolean): Promise<NodeSnapshotsWritten> {
  forgetNodeSnapshots(place);
  snapshotFolder(place.dir);
  removeStaleTemps(place.dir);
  const files: SnapshotSet['files'] = [];
  let layout: string | undefined;
  let bytes = 0;
  for (const [accountId, size] of galleries.sizes()) {
    if (size === 0) continue;
    const gallery = galleries.existing(accountId);
    const dump = gallery instanceof IndexGallery ? await gallery.exportCodes() : undefined;
    if (!dump) throw new Error('a gallery without int8 codes cannot be written as a snapshot');
    if (layout !== undefined && dump.layout !== layout) throw new Error(`galleries of two code layouts (${layout}, ${dump.layout})`);
    layout = dump.layout;
    const file = snapshotFileName(accountId);
    // No seqEntry in the header: the set's mark stands for the whole set.
    bytes += await writeSnapshot({ dir: place.dir, file, accountId, modelId: state.modelId, seq: state.position, dump, keyFor: place.keyFor, abandoned });
    files.push({ file, persons: dump.count });
  }
  // Files of accounts that no longer hold anyone: a later set never names them, so they only take room.
  const kept = new Set(files.map((f) => f.file));
  for (const name of fs.readdirSync(place.dir)) {
    if (name.endsWith(SNAPSHOT_SUFFIX) && !kept.has(name)) fs.rmSync(path.join(place.dir, name), { force: true });
  }
  const set: SnapshotSet = {
    format: SET_FORMAT, ...state, mark: markDigest(state.mark), layout: layout ?? (await galleries.codeLayout()) ?? '', written: new Date().toISOString(), files,
  };
  writePrivateFileAtomically(path.join(place.dir, SNAPSHOT_SET), Buffer.from(JSON.stringify(set), 'utf8'));
  return { accounts: files.length, persons: files.reduce((n, f) => n + f.persons, 0), bytes };
}

/** Removes the set file (the snapshot files stay until the next write replaces them). */
export function forgetNodeSnapshots(place: SnapshotPlace): void {
  const target = path.join(place.dir, SNAPSHOT_SET);
  if (!fs.existsSync(target)) return;
  fs.rmSync(target, { force: true });
  syncFolder(place.dir);
}

/** Removes the set and every snapshot file (a node started with snapshots off keeps none). */
export function discardNodeSnapshots(place: SnapshotPlace): void {
  forgetNodeSnapshots(place);
  discardSnapshots(place.dir);
}

export type NodeSnapshotRestore = { loaded: number; accounts: number } | { reason: string };

/**
 * Fills `galleries` from the set written at `state`, natively (Collection.importSealed). The set file is
 * removed first, whatever follows. Anything that does not fit (no set, another state, model or layout, a file
 * missing, damaged or of another count) empties the galleries again and says why: the caller then builds
 * from the cache's rows.
 */
export async function restoreNodeSnapshots(galleries: Galleries, place: SnapshotPlace, state: NodeSnapshotState,
  options: { threads?: number } = {}): Promise<NodeSnapshotRestore> {
  let set: SnapshotSet;
  try {
    set = JSON.parse(fs.readFileSync(path.join(place.dir, SNAPSHOT_SET), 'utf8')) as SnapshotSet;
  } catch (err) {
    return { reason: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no snapshots (the last stop did not write them)' : 'the snapshot set does not read' };
  } finally {
    forgetNodeSnapshots(place);
  }
  const why = await unfitSet(set, state, galleries);
  if (why) return { reason: why };
  const opened: OpenSnapshot[] = [];
  try {
    const accounts = new Set<string>();
    let loaded = 0;
    for (const { file, persons } of set.files) {
      const snapshot = openSnapshot(path.join(place.dir, file));
      if (!snapshot) throw new Error(`snapshot ${file} is missing`);
      opened.push(snapshot);
      const { header } = snapshot;
      if (snapshotFileName(header.accountId) !== file || accounts.has(header.accountId)) throw new Error(`snapshot ${file} names another account`);
      if (header.modelId !== set.modelId || header.layout !== set.layout || header.seq !== set.position || header.count !== persons) {
        throw new Error(`snapshot ${file} is not of the set's model, layout, position or size`);
      }
      accounts.add(header.accountId);
      const gallery = galleries.of(header.accountId) as IndexGallery;
      const key = place.keyFor(Buffer.from(header.salt, 'base64')).export();
      try {
        await gallery.importSealed(header.dim, sealedJob(snapshot, key), { threads: options.threads ?? 0 });
      } catch (err) {
        throw err instanceof IndexError && err.reason ? groupError(err.reason, err.message) : err;
      } finally {
        key.fill(0);
      }
      if (gallery.size !== header.count) throw new Error(`snapshot of ${header.count} persons loaded ${gallery.size}`);
      loaded += header.count;
    }
    return { loaded, accounts: accounts.size };
  } catch (err) {
    galleries.close();
    return { reason: (err as Error).message };
  } finally {
    for (const snapshot of opened) closeSnapshot(snapshot);
  }
}

function markDigest(mark: NodeSnapshotState['mark']): string {
  const fields = mark ? [mark.seq, mark.accountId, mark.personId, mark.at] : [];
  return crypto.createHash('sha256').update(JSON.stringify(fields), 'utf8').digest('hex');
}

/** Why the set cannot stand in for the cache's rows now, or undefined. */
async function unfitSet(set: SnapshotSet, state: NodeSnapshotState, galleries: Galleries): Promise<string | undefined> {
  if (set?.format !== SET_FORMAT || !Array.isArray(set.files)) return 'the snapshot set is of another format';
  if (set.database !== state.database || set.modelId !== state.modelId) return 'snapshots of another database or model';
  if (set.position !== state.position || set.mark !== markDigest(state.mark)) return `snapshots at change ${set.position}, the gallery cache stands at ${state.position}`;
  if (chooseUnsealer() !== 'native') return 'snapshots are opened natively only';
  const layout = await galleries.codeLayout();
  if (set.layout !== layout) return `snapshot layout ${set.layout}, the index writes ${layout}`;
  return undefined;
}
