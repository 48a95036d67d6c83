// The data key wrapped by the key-encryption key ([storage] key_file): the only form in which the data key
// is ever written down (the store's `meta`, and the header of each gallery snapshot, which a start opens
// before the store; see docs/index-snapshot.md). Kept apart from ./data-key.ts so that such an early
// reader needs neither the store nor LMDB.
import crypto from 'node:crypto';

import { openBytes, SealError, sealBytes, secretKey } from './aead';

const WRAP_AAD = Buffer.from('face-check storage data key', 'utf8');

/** `dataKey` sealed under `kek`. */
export function wrapDataKey(kek: Uint8Array, dataKey: Uint8Array): Buffer {
  return sealBytes(secretKey(kek), dataKey, WRAP_AAD);
}

/** The data key inside `wrapped` (a fresh buffer: zero it after use), or undefined when `kek` does not open it. */
export function unwrapDataKey(kek: Uint8Array, wrapped: Uint8Array): Buffer | undefined {
  try {
    return openBytes(secretKey(kek), wrapped, WRAP_AAD, 'storage data key');
  } catch (err) {
    if (err instanceof SealError) return undefined;
    throw err;
  }
}

/**
 * A 256-bit key for files kept beside the store, derived from the data key with HKDF-SHA256 for `purpose`
 * and `salt` (Store.deriveKey): it opens nothing in the store, and a file sealed with it opens only with
 * that store's data key. A fresh buffer: zero it after use.
 */
export function deriveFileKey(dataKey: crypto.KeyObject | Uint8Array, purpose: string, salt: Uint8Array): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', dataKey, salt, purpose, 32));
}
