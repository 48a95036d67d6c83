// Where an account's snapshot lives and which key seals it. The folder is inside the store's (0700, files
// 0600): the snapshots are a cache of the store and go wherever it goes. A file is named after a hash of the
// account id (ids may hold any character); its header names the account.
import crypto from 'node:crypto';
import path from 'node:path';

import type { LocalStore as Store } from '../../storage/interfaces';
import { KEY_PURPOSE } from './format';

export const SNAPSHOT_FOLDER = 'index-snapshots';
export const SNAPSHOT_SUFFIX = '.snap';

export interface SnapshotPlace {
  dir: string;
  /** The key of a file with this salt. */
  keyFor(salt: Uint8Array): crypto.KeyObject;
  /** The store's data key as its key file wraps it (written into each snapshot's header). */
  keyWrap?(): Uint8Array | undefined;
}

export function snapshotPlaceOf(store: Store): SnapshotPlace {
  return { dir: path.join(store.path, SNAPSHOT_FOLDER), keyFor: (salt) => store.deriveKey(KEY_PURPOSE, salt),
    keyWrap: () => store.dataKeyWrap() };
}

export function snapshotFileName(accountId: string): string {
  return `${crypto.createHash('sha256').update(accountId, 'utf8').digest('hex').slice(0, 32)}${SNAPSHOT_SUFFIX}`;
}
