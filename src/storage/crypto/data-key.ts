// The store's data key: 32 random bytes that seal every value, kept in the `meta` database only wrapped
// (AES-256-GCM) by the key-encryption key of [storage] key_file. Rotating that key re-wraps this one value;
// no record is re-encrypted.
import crypto from 'node:crypto';
import path from 'node:path';
import type { Database } from 'lmdb';

import { KEY_BYTES, secretKey } from './aead';
import { deriveFileKey, unwrapDataKey, wrapDataKey } from './key-wrap';
import { createKeyFile, readKeyFile, StoreKeyError, writeKeyFileAtomically } from './key-file';

const WRAPPED = 'data-key';
/** Set when freed pages may still hold a plain value or an old wrap: the next sole open compacts (LMDB). */
export const COMPACT_PENDING = 'compact-pending';
/** The data key wrapped by a key being rotated in, until its key file is in place (see rotateKeyFile). */
const WRAPPED_NEXT = 'data-key-next';

type Meta = Database<unknown, string>;

function bytesOf(v: unknown): Uint8Array | undefined {
  return v instanceof Uint8Array ? v : undefined;
}

/** The data key as wrapped in `meta` (what each gallery snapshot's header carries), if it has one yet. */
export function storedDataKeyWrap(meta: Meta): Uint8Array | undefined {
  return bytesOf(meta.get(WRAPPED));
}

/**
 * The data key of the store at `dir`. A store without a wrapped data key gets one (and the key file is made,
 * 0600, when absent) unless `sealed` says the store already holds sealed values; a store with one needs a
 * key file that unwraps it: a missing, unreadable, malformed or wrong key file is a StoreKeyError, and no new
 * key is ever made for it.
 */
export async function unlockDataKey(meta: Meta, keyFile: string, dir: string, sealed: boolean): Promise<crypto.KeyObject> {
  let wrapped = bytesOf(meta.get(WRAPPED));
  if (!wrapped) {
    if (sealed) throw new StoreKeyError(`storage ${dir}: sealed store without its wrapped data key (meta "${WRAPPED}")`);
    const kek = readKeyFile(keyFile) ?? createKeyFile(keyFile);
    const dataKey = crypto.randomBytes(KEY_BYTES);
    const fresh = wrapDataKey(kek, dataKey);
    dataKey.fill(0);
    kek.fill(0);
    await meta.ifNoExists(WRAPPED, () => { meta.put(WRAPPED, fresh); });  // two openers agree on one
    wrapped = bytesOf(meta.get(WRAPPED))!;
  }
  const kek = readKeyFile(keyFile);
  if (!kek) {
    throw new StoreKeyError(`storage ${dir}: key file ${keyFile} is missing; this store is sealed and opens only with its key ` +
      '(no new key is made for an existing store)');
  }
  try {
    let dataKey = unwrapDataKey(kek, wrapped);
    const next = bytesOf(meta.get(WRAPPED_NEXT));
    if (!dataKey && next) {
      // A rotation stopped after writing the new key file: that file is the key now. (A pending wrap that
      // the old key still opens beside is left alone: it may belong to a rotation in progress.)
      dataKey = unwrapDataKey(kek, next);
      if (dataKey) await meta.transaction(() => { meta.put(WRAPPED, next); meta.remove(WRAPPED_NEXT); });
    }
    if (!dataKey) throw new StoreKeyError(`storage ${dir}: key file ${keyFile} does not open this store (another store's key?)`);
    const key = secretKey(dataKey);
    dataKey.fill(0);
    return key;
  } finally {
    kek.fill(0);
  }
}

/**
 * Wraps the data key under a fresh key-encryption key written to `target` (atomically, 0600); afterwards
 * only that key opens the store. Crash-safe: the new wrap is stored beside the old one before the key file
 * is written, and unlockDataKey finishes a rotation that stopped after it. One rotation at a time (the
 * command takes the store lock); a pending wrap of a rotation that stopped earlier is overwritten.
 */
export async function rotateKeyFile(meta: Meta, dataKey: crypto.KeyObject, target: string): Promise<void> {
  const kek = crypto.randomBytes(KEY_BYTES);
  const raw = dataKey.export();
  const next = wrapDataKey(kek, raw);
  raw.fill(0);
  await meta.put(WRAPPED_NEXT, next);
  try {
    writeKeyFileAtomically(target, kek);
  } catch (err) {
    await meta.remove(WRAPPED_NEXT);
    throw new StoreKeyError(`storage key file ${target} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the old key still opens the store`);
  } finally {
    kek.fill(0);
  }
  // The old wrap stays in a freed page until the store is compacted (at its next open with no other reader).
  await meta.transaction(() => { meta.put(WRAPPED, next); meta.remove(WRAPPED_NEXT); meta.put(COMPACT_PENDING, true); });
}

/**
 * A store's rotateKey and deriveKey over its data key, for both backends: `rewrap` stores the data key
 * wrapped by a fresh key written to the target key file (default: `keyFile`, replaced atomically); a derived
 * key is HKDF-SHA256 of `purpose` and `salt`, and opens nothing in the store.
 */
export function dataKeyUses(dataKey: crypto.KeyObject, keyFile: string, rewrap: (target: string) => Promise<void>) {
  return {
    rotateKey: async (newKeyFile?: string): Promise<string> => {
      const target = path.resolve(newKeyFile || keyFile);
      await rewrap(target);
      return target;
    },
    deriveKey: (purpose: string, salt: Uint8Array): crypto.KeyObject => {
      const raw = deriveFileKey(dataKey, purpose, salt);
      const key = crypto.createSecretKey(raw);  // keeps its own copy
      raw.fill(0);
      return key;
    },
  };
}
