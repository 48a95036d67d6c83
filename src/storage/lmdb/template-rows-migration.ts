// Storage schema 3 had no template rows nor template counts: writes one sealed row per person from the
// segments, `batch` segments per transaction, each transaction also recording the last segment done (meta
// "template-rows-after") so an interrupted run resumes after it. The persons do not change, but their entries
// go to the change log like every other write of template data (a reader of the log re-reads them: harmless).
import type { Database, RootDatabase } from 'lmdb';

import type { PersonRepository, SegmentKey } from './persons';
import { segmentIds, segmentLayout } from './template-segment';

const PROGRESS = 'template-rows-after';

/** Writes the missing rows; returns how many rows this run wrote. */
export async function writeTemplateRows(root: RootDatabase, meta: Database<unknown, string>, persons: PersonRepository,
  batch = 256): Promise<number> {
  let after = meta.get(PROGRESS) as SegmentKey | undefined;
  let written = 0;
  for (;;) {
    const keys: SegmentKey[] = [];
    for (const key of persons.segments.allKeys(after)) {
      keys.push(key);
      if (keys.length >= batch) break;
    }
    if (keys.length === 0) return written;
    // Sealed before the transaction: lmdb-js commits what an async transaction wrote before its callback
    // threw, so nothing in it may fail half-way (rows written but the progress not recorded).
    const work: Array<{ accountId: string; personId: string; sealed: Buffer }> = [];
    for (const key of keys) {
      const bytes = persons.segments.bytes(key);
      if (!bytes) continue;
      const layout = segmentLayout(bytes);
      const ids = segmentIds(bytes, layout);
      const rowBytes = layout.dimension * 4;
      ids.forEach((personId, i) => {
        const at = layout.templatesAt + i * rowBytes;
        work.push({ accountId: key[1], personId, sealed: persons.rows.sealed(key[1], personId, bytes.subarray(at, at + rowBytes)) });
      });
    }
    const last = keys[keys.length - 1];
    await root.transaction(() => {
      const byAccount = new Map<string, string[]>();
      for (const { accountId, personId, sealed } of work) {
        persons.rows.putSealed(accountId, personId, sealed);
        let ids = byAccount.get(accountId);
        if (!ids) byAccount.set(accountId, (ids = []));
        ids.push(personId);
      }
      for (const [accountId, ids] of byAccount) persons.changes.append(accountId, ids);
      meta.put(PROGRESS, last);
    });
    written += work.length;
    after = last;
  }
}

/**
 * Marks the migration finished and writes the per-account template counts from the segments (with the
 * schema bump, in the caller's transaction; `counts` from persons.segments.countFromKeys() before it).
 */
export function endTemplateRows(meta: Database<unknown, string>, persons?: PersonRepository,
  counts?: ReturnType<PersonRepository['segments']['countFromKeys']>): void {
  meta.remove(PROGRESS);
  if (persons && counts) persons.segments.putCounts(counts.values());
}
