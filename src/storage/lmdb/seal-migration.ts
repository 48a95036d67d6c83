// Storage schema 2 kept template segments, reference images and the service's private key plain: seals them
// in place, `batch` values per transaction. Each transaction also stores how far it got (meta "sealing"), so
// an interrupted run resumes after the last sealed value instead of sealing a value twice.
import type { Database, Key, RootDatabase } from 'lmdb';

import type { Sealer } from '../crypto/sealer';
import { TEMPLATES_DB } from './persons';
import { IMAGES_DB } from '../records';
import type { ServiceKeyRepository } from './service-key';

const PROGRESS = 'sealing';
const ORDER = [TEMPLATES_DB, IMAGES_DB] as const;

interface Progress {
  db: (typeof ORDER)[number] | 'service-keys';
  /** The last key sealed in `db`; absent: none yet. */
  after?: Key;
}

function sameKey(a: Key, b: Key): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Seals every plain value; returns how many values it sealed in this run. */
export async function sealPlainStore(root: RootDatabase, meta: Database<unknown, string>, sealer: Sealer,
  serviceKeys: ServiceKeyRepository, batch = 1024): Promise<number> {
  let progress = (meta.get(PROGRESS) as Progress | undefined) ?? { db: ORDER[0] };
  let sealed = 0;
  for (let step = ORDER.indexOf(progress.db as (typeof ORDER)[number]); step >= 0 && step < ORDER.length; step++) {
    const name = ORDER[step];
    const db = root.openDB<Buffer, Key>({ name, encoding: 'binary' });
    let after = progress.db === name ? progress.after : undefined;
    for (;;) {
      // Sealed before the transaction: lmdb-js commits the writes an async transaction made before its
      // callback threw, so nothing in it may fail half-way (values sealed but the progress not recorded).
      const work = [...db.getRange({ ...(after !== undefined ? { start: after } : {}), limit: batch + 1 })]
        .filter(({ key }) => after === undefined || !sameKey(key, after)).slice(0, batch)
        .map(({ key, value }) => ({ key, value: sealer.seal(name, key, value) }));
      const next: Progress = work.length
        ? { db: name, after: work[work.length - 1].key }
        : { db: ORDER[step + 1] ?? 'service-keys' };
      await root.transaction(() => {
        for (const { key, value } of work) db.put(key, value);
        meta.put(PROGRESS, next);
      });
      sealed += work.length;
      if (!work.length) break;
      after = next.after;
    }
    progress = { db: ORDER[step + 1] ?? 'service-keys' };
  }
  sealed += await serviceKeys.sealPlainKeys();
  return sealed;
}

/** Marks the sealing finished (with the schema bump, in the caller's transaction). */
export function endSealing(meta: Database<unknown, string>): void {
  meta.remove(PROGRESS);
}
