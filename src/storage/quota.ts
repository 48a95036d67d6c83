// Request counters per account and UTC day. Check-and-increment runs inside one write transaction, so
// concurrent requests can never overshoot the limit.
import type { Database, RootDatabase } from 'lmdb';

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
}
