// Moving a store's day counters (face-check migrate): each counter is raised to the moved count where it is
// lower and never lowered, so a re-run writes nothing and a day's count carried over keeps its quota used.
import type { Database, Key, RootDatabase } from 'lmdb';

/** Raises db[key] to count for each [key, count], in one transaction; returns how many were written. */
export function raiseCounts<K extends Key>(root: RootDatabase, db: Database<number, K>,
  counts: Iterable<readonly [K, number]>): Promise<number> {
  return root.transaction(() => {
    let written = 0;
    for (const [key, count] of counts) {
      if ((db.get(key) ?? 0) >= count) continue;
      db.put(key, count);
      written++;
    }
    return written;
  });
}
