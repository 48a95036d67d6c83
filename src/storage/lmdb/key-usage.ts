// The API keys' request counters per UTC day in LMDB; the counting in memory and the writes every few seconds
// are ../key-usage-counter.ts's.
import type { Database, RootDatabase } from 'lmdb';
import { WriteBehindKeyUsage, type KeyUsageRows } from '../key-usage-counter';
import { raiseCounts } from './raise-counts';
import type { KeyUsageDay, KeyUsageEntry } from '../records';

export const KEY_USAGE_DB = 'key-usage';

type UsageKey = [string, string];

/** The counters of `root`, counted in memory and written every `flushIntervalMs` (default FLUSH_INTERVAL_MS). */
export function lmdbKeyUsage(root: RootDatabase, flushIntervalMs?: number): WriteBehindKeyUsage {
  return new WriteBehindKeyUsage(new LmdbKeyUsageRows(root), flushIntervalMs);
}

class LmdbKeyUsageRows implements KeyUsageRows {
  private readonly db: Database<number, UsageKey>;

  constructor(private readonly root: RootDatabase) {
    this.db = root.openDB<number, UsageKey>({ name: KEY_USAGE_DB });
  }

  async add(counts: readonly KeyUsageEntry[]): Promise<void> {
    await this.root.transaction(() => {
      for (const { keyId, day, requests } of counts) this.db.put([keyId, day], (this.db.get([keyId, day]) ?? 0) + requests);
    });
  }

  range(keyId: string, fromDay: string, toDay: string): KeyUsageDay[] {
    const days: KeyUsageDay[] = [];
    // Starts at the first day and stops at the first key past the last day or of another key.
    for (const { key, value } of this.db.getRange({ start: [keyId, fromDay] })) {
      if (!Array.isArray(key) || key[0] !== keyId || key[1] > toDay) break;
      days.push({ day: key[1], requests: value });
    }
    return days;
  }

  entries(): KeyUsageEntry[] {
    return [...this.db.getRange()].map(({ key, value }) => ({ keyId: key[0], day: key[1], requests: value }));
  }

  importCounts(entries: readonly KeyUsageEntry[]): Promise<number> {
    return raiseCounts(this.root, this.db, entries.map((e) => [[e.keyId, e.day] as UsageKey, e.requests] as const));
  }
}
