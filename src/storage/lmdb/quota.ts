// Request counters per account and UTC day. Check-and-increment runs inside one write transaction, so
// concurrent requests can never overshoot the limit.
import type { Database, RootDatabase } from 'lmdb';
import { raiseCounts } from './raise-counts';
import type { QuotaEntry } from '../records';

type QuotaKey = [string, string];

export class QuotaRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<number, QuotaKey>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.db = root.openDB<number, QuotaKey>({ name: 'quota' });
  }

  /** Counts one request unless `limit` is reached; returns false (nothing counted) when it is. */
  async tryConsume(accountId: string, day: string, limit: number): Promise<boolean> {
    const key: QuotaKey = [accountId, day];
    return this.root.transaction(() => {
      const used = this.db.get(key) ?? 0;
      if (used >= limit) return false;
      this.db.put(key, used + 1);
      return true;
    });
  }

  used(accountId: string, day: string): number {
    return this.db.get([accountId, day]) ?? 0;
  }

  /** Every counter, in account then day order. */
  entries(): QuotaEntry[] {
    return [...this.db.getRange()].map(({ key, value }) => ({ accountId: key[0], day: key[1], used: value }));
  }

  /**
   * Raises each counter to the moved count where it is lower, never lowers one (a re-run writes nothing, and
   * a day's count carried over keeps its quota used); returns how many were written.
   */
  async importCounts(entries: readonly QuotaEntry[]): Promise<number> {
    return raiseCounts(this.root, this.db, entries.map((e) => [[e.accountId, e.day] as QuotaKey, e.used] as const));
  }
}
