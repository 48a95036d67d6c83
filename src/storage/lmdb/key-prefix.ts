// Range reads over compound LMDB keys by prefix. No end sentinel like `[s + '\u0000']`: lmdb-js's
// ordered-binary escapes a NUL inside a short string but writes a string of 63 or more characters raw, so
// for a long `s` that sentinel sorts *before* `[s, …]` and the range comes back empty. A read starts at the
// prefix and stops at the first key that no longer carries it, which holds whatever the key encoding does.
import type { Database, Key } from 'lmdb';

type CompoundKey = Key[];

function startsWith(key: CompoundKey, prefix: readonly Key[]): boolean {
  if (!Array.isArray(key) || key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** Keys whose first elements equal `prefix`, in key order (at most `limit`). */
export function* keysWithPrefix<K extends CompoundKey>(db: Database<unknown, K>, prefix: readonly Key[],
  limit = Infinity): Generator<K> {
  if (limit <= 0) return;
  let n = 0;
  for (const key of db.getKeys({ start: prefix as unknown as K })) {
    if (!startsWith(key, prefix)) return;
    yield key;
    if (++n >= limit) return;
  }
}

/** Entries whose key's first elements equal `prefix`, in key order. */
export function* entriesWithPrefix<V, K extends CompoundKey>(db: Database<V, K>, prefix: readonly Key[]): Generator<{ key: K; value: V }> {
  for (const entry of db.getRange({ start: prefix as unknown as K })) {
    if (!startsWith(entry.key, prefix)) return;
    yield entry;
  }
}

/** Number of keys that carry `prefix`. */
export function countWithPrefix<K extends CompoundKey>(db: Database<unknown, K>, prefix: readonly Key[]): number {
  let n = 0;
  for (const _ of keysWithPrefix(db, prefix)) n++;
  return n;
}

/**
 * The last key `[...prefix, n]` with a whole number n >= 0 (numbers sort numerically in ordered-binary, so a
 * reverse read from `[...prefix, MAX_SAFE_INTEGER]` meets it first), or undefined.
 */
export function lastNumberedKey<K extends CompoundKey>(db: Database<unknown, K>, prefix: readonly Key[]): K | undefined {
  for (const key of db.getKeys({ start: [...prefix, Number.MAX_SAFE_INTEGER] as unknown as K, reverse: true, limit: 1 })) {
    return startsWith(key, prefix) ? key : undefined;
  }
  return undefined;
}
