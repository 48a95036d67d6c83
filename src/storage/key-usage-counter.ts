// Requests made with each API key, per UTC day, for the back-office's usage charts, on either backend. The
// person API must not pay a database write per request for a statistic, so a request only counts in memory;
// the counts are added to the stored ones every FLUSH_INTERVAL_MS and when the store closes (a crash loses
// at most one interval: statistics, not acknowledged data; the quota, which refuses requests, has its own
// transactional counter). range() adds this process's unwritten counts to what is stored (another node's
// appear once it has flushed). The backend only stores the counters (KeyUsageRows).
import type { AsyncKeyUsageRepository } from './interfaces';
import { FLUSH_INTERVAL_MS, type KeyUsageDay, type KeyUsageEntry } from './records';

/** A backend's stored counters, per API key and UTC day. */
export interface KeyUsageRows {
  /** Adds each count to its counter, all in one transaction. */
  add(counts: readonly KeyUsageEntry[]): Promise<void>;
  /** The stored counts of `keyId` from `fromDay` to `toDay` (inclusive); days without requests absent. */
  range(keyId: string, fromDay: string, toDay: string): KeyUsageDay[] | Promise<KeyUsageDay[]>;
  /** Every stored counter, in key then day order. */
  entries(): KeyUsageEntry[] | Promise<KeyUsageEntry[]>;
  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  importCounts(entries: readonly KeyUsageEntry[]): Promise<number>;
}

export class WriteBehindKeyUsage implements AsyncKeyUsageRepository {
  /** "keyId day" -> requests not written yet. */
  private pending = new Map<string, number>();
  /** Batches taken from `pending` whose write has not finished: still counted by range(). */
  private readonly writingBatches = new Set<Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly rows: KeyUsageRows, private readonly flushIntervalMs = FLUSH_INTERVAL_MS) {}

  /** Counts one request made with `keyId` at `at` (in memory until the next flush). */
  record(keyId: string, at: Date): void {
    if (this.closed) return;
    const key = `${keyId} ${at.toISOString().slice(0, 10)}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    // The timer is started by the first count, so an idle store has no timer; unref: it never keeps the
    // process alive on its own.
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      // A failed write (a database down) loses these counts only; it must not take the process down.
      this.flush().catch(() => undefined);
    }, this.flushIntervalMs).unref();
  }

  /** Writes the counts gathered so far in one transaction; resolves when they are stored. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.pending;
    this.pending = new Map();
    if (batch.size === 0) return this.writing;
    this.writingBatches.add(batch);
    // Sorted: nodes flushing the same keys lock their rows in one order and cannot deadlock. Flushes are
    // chained so that two of them never add to the same counter at once; a failed one does not stop the next.
    const counts = [...batch.keys()].sort().map((name) => ({ ...split(name), requests: batch.get(name)! }));
    const write = this.writing.catch(() => undefined).then(() => this.rows.add(counts))
      .finally(() => this.writingBatches.delete(batch));
    this.writing = write.then(() => undefined);
    return this.writing;
  }

  async range(keyId: string, fromDay: string, toDay: string): Promise<KeyUsageDay[]> {
    const byDay = new Map<string, number>();
    for (const { day, requests } of await this.rows.range(keyId, fromDay, toDay)) byDay.set(day, requests);
    for (const batch of [...this.writingBatches, this.pending]) {
      for (const [name, requests] of batch) {
        const { keyId: k, day } = split(name);
        if (k === keyId && day >= fromDay && day <= toDay) byDay.set(day, (byDay.get(day) ?? 0) + requests);
      }
    }
    return [...byDay].sort(([a], [b]) => a.localeCompare(b)).map(([day, requests]) => ({ day, requests }));
  }

  /** Every written counter (flush first for this process's pending counts). */
  async entries(): Promise<KeyUsageEntry[]> {
    return this.rows.entries();
  }

  importCounts(entries: readonly KeyUsageEntry[]): Promise<number> {
    return this.rows.importCounts(entries);
  }

  /** Writes what is pending; called before the store closes. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}

function split(name: string): { keyId: string; day: string } {
  const space = name.lastIndexOf(' ');
  return { keyId: name.slice(0, space), day: name.slice(space + 1) };
}
