// Requests made with each API key, per UTC day, for the back-office's usage charts. The person API must not pay
// a database write per request for a statistic, so increments are added up in memory and written together every
// FLUSH_INTERVAL_MS and when the store closes. A crash loses at most the last interval's counts: these are
// statistics, not acknowledged data (the quota, which refuses requests, has its own transactional counter).
import type { Database, RootDatabase } from 'lmdb';
import { raiseCounts } from './raise-counts';
import { FLUSH_INTERVAL_MS, type KeyUsageDay, type KeyUsageEntry } from '../records';

export const KEY_USAGE_DB = 'key-usage';

type UsageKey = [string, string];

export class KeyUsageRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<number, UsageKey>;
  /** "keyId day" -> requests not written yet. */
  private pending = new Map<string, number>();
  /** Batches taken from `pending` whose write has not finished: still counted by range(). */
  private readonly writingBatches = new Set<Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(root: RootDatabase, private readonly flushIntervalMs = FLUSH_INTERVAL_MS) {
    this.root = root;
    this.db = root.openDB<number, UsageKey>({ name: KEY_USAGE_DB });
  }

  /** Counts one request made with `keyId` at `at` (in memory until the next flush). */
  record(keyId: string, at: Date): void {
    if (this.closed) return;
    const key = `${keyId} ${at.toISOString().slice(0, 10)}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    // The timer is started by the first count, so an idle store has no timer; unref: it never keeps the
    // process alive on its own.
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      // A failed write loses these counts only (statistics); it must not take the process down.
      this.flush().catch(() => undefined);
    }, this.flushIntervalMs).unref();
  }

  /** Writes the counts gathered so far in one transaction; resolves when they are on disk. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.pending;
    this.pending = new Map();
    if (batch.size === 0) return this.writing;
    this.writingBatches.add(batch);
    // Flushes are chained so that two of them never add to the same counter at once; a failed one does not
    // stop the next.
    const write = this.writing.catch(() => undefined).then(() => this.root.transaction(() => {
      for (const [name, requests] of batch) {
        const space = name.lastIndexOf(' ');
        const key: UsageKey = [name.slice(0, space), name.slice(space + 1)];
        this.db.put(key, (this.db.get(key) ?? 0) + requests);
      }
    })).finally(() => this.writingBatches.delete(batch));
    this.writing = write.then(() => undefined);
    return this.writing;
  }

  /** The written counts of `keyId` from `fromDay` to `toDay` (inclusive, YYYY-MM-DD), plus those still in
   *  memory; days without requests are absent. */
  range(keyId: string, fromDay: string, toDay: string): KeyUsageDay[] {
    const byDay = new Map<string, number>();
    // Starts at the first day and stops at the first key past the last day or of another key.
    for (const { key, value } of this.db.getRange({ start: [keyId, fromDay] })) {
      if (!Array.isArray(key) || key[0] !== keyId || key[1] > toDay) break;
      byDay.set(key[1], value);
    }
    for (const batch of [...this.writingBatches, this.pending]) {
      for (const [name, requests] of batch) {
        const space = name.lastIndexOf(' ');
        const day = name.slice(space + 1);
        if (name.slice(0, space) === keyId && day >= fromDay && day <= toDay) byDay.set(day, (byDay.get(day) ?? 0) + requests);
      }
    }
    return [...byDay].sort(([a], [b]) => a.localeCompare(b)).map(([day, requests]) => ({ day, requests }));
  }

  /** Every written counter (flush first for this process's pending counts), in key then day order. */
  entries(): KeyUsageEntry[] {
    return [...this.db.getRange()].map(({ key, value }) => ({ keyId: key[0], day: key[1], requests: value }));
  }

  /** Raises each written counter to the moved count where it is lower, never lowers one; returns how many were written. */
  async importCounts(entries: readonly KeyUsageEntry[]): Promise<number> {
    return raiseCounts(this.root, this.db, entries.map((e) => [[e.keyId, e.day] as UsageKey, e.requests] as const));
  }

  /** Writes what is pending; called before the environment closes. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}
