// The data key of a PostgreSQL store, kept exactly as LMDB keeps it: wrapped by the key-encryption key of
// [storage] key_file in the `meta` table (rows 'data-key' and, during a rotation, 'data-key-next'). Every node
// given the same key file opens it. The unwrapping, the crash-safe rotation and their checks are the LMDB
// store's own (src/storage/crypto/data-key.ts); they read and write an LMDB database, so this file hands them
// a small stand-in: the meta rows read once into memory, writes applied to the table in one transaction each.
import type crypto from 'node:crypto';
import type { Database } from 'lmdb';

import { COMPACT_PENDING, rotateKeyFile, unlockDataKey } from '../crypto/data-key';
import type { Db } from './pool';

type Op = { put: string; value: Uint8Array } | { remove: string };

/** The subset of an lmdb-js Database that data-key.ts uses, over the `meta` table. */
class MetaRows {
  private collecting: Op[] | undefined;

  private constructor(private readonly db: Db, private readonly rows: Map<string, Uint8Array>) {}

  static async load(db: Db): Promise<MetaRows> {
    const { rows } = await db.query<{ key: string; value: Buffer }>('SELECT key, value FROM meta');
    return new MetaRows(db, new Map(rows.map((r) => [r.key, r.value])));
  }

  get(key: string): Uint8Array | undefined {
    return this.rows.get(key);
  }

  put(key: string, value: unknown): Promise<void> {
    // LMDB needs a compaction to drop a replaced wrap from freed pages; here VACUUM does (see rotateDataKeyWrap).
    if (key === COMPACT_PENDING) return Promise.resolve();
    if (!(value instanceof Uint8Array)) return Promise.reject(new TypeError(`meta ${key}: only bytes are stored`));
    return this.apply({ put: key, value });
  }

  remove(key: string): Promise<void> {
    return this.apply({ remove: key });
  }

  /** Runs `write` (puts and removes) as one transaction. */
  async transaction(write: () => void): Promise<void> {
    const ops = this.collect(write);
    await this.db.transaction(async (tx) => {
      for (const op of ops) await MetaRows.write(tx, op, false);
    });
  }

  /** Runs `write` unless `key` exists: of two nodes writing at once, the first write stays, and both read it. */
  async ifNoExists(key: string, write: () => void): Promise<void> {
    const ops = this.collect(write);
    await this.db.transaction(async (tx) => {
      for (const op of ops) await MetaRows.write(tx, op, true);
    });
    const { rows } = await this.db.query<{ value: Buffer }>('SELECT value FROM meta WHERE key = $1', [key]);
    if (rows[0]) this.rows.set(key, rows[0].value);
    else this.rows.delete(key);
  }

  private collect(write: () => void): Op[] {
    const ops: Op[] = [];
    this.collecting = ops;
    try {
      write();
    } finally {
      this.collecting = undefined;
    }
    return ops;
  }

  private apply(op: Op): Promise<void> {
    if ('put' in op) this.rows.set(op.put, op.value);
    else this.rows.delete(op.remove);
    if (this.collecting) {
      this.collecting.push(op);
      return Promise.resolve();
    }
    return MetaRows.write(this.db, op, false);
  }

  private static async write(q: Pick<Db, 'query'>, op: Op, onlyIfAbsent: boolean): Promise<void> {
    if ('remove' in op) {
      await q.query('DELETE FROM meta WHERE key = $1', [op.remove]);
    } else {
      await q.query(`INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO ${onlyIfAbsent ? 'NOTHING' : 'UPDATE SET value = EXCLUDED.value'}`,
        [op.put, Buffer.from(op.value.buffer, op.value.byteOffset, op.value.byteLength)]);
    }
  }

  asLmdb(): Database<unknown, string> {
    // data-key.ts calls only get, put, remove, transaction and ifNoExists, which this class provides.
    return this as unknown as Database<unknown, string>;
  }
}

/** Tables whose rows hold values sealed under the data key: with any of them filled, a missing wrap is an error. */
async function holdsSealedValues(db: Db): Promise<boolean> {
  const { rows } = await db.query<{ sealed: boolean }>(`SELECT EXISTS (SELECT 1 FROM persons)
    OR EXISTS (SELECT 1 FROM service_keys) OR EXISTS (SELECT 1 FROM licences)
    OR EXISTS (SELECT 1 FROM settings WHERE sealed) AS sealed`);
  return rows[0].sealed;
}

/**
 * The data key of the database: unwrapped with `keyFile`, or made and wrapped (key file made, 0600, when
 * absent) for a database without one. A database with a wrap needs a key file that opens it (StoreKeyError).
 * `where` names the database in messages (no password).
 */
export async function unlockPostgresDataKey(db: Db, keyFile: string, where: string): Promise<crypto.KeyObject> {
  const meta = await MetaRows.load(db);
  return unlockDataKey(meta.asLmdb(), keyFile, where, await holdsSealedValues(db));
}

/**
 * Re-wraps the data key under a fresh key-encryption key in `target` (crash-safe as in LMDB), then VACUUMs
 * `meta` so the old wrap does not stay in a dead row version. Other nodes keep working: the data key itself
 * is unchanged; their key files must be replaced before their next start.
 */
export async function rotateDataKeyWrap(db: Db, dataKey: crypto.KeyObject, target: string): Promise<void> {
  const meta = await MetaRows.load(db);
  await rotateKeyFile(meta.asLmdb(), dataKey, target);
  await db.query('VACUUM (FULL) meta');
}
