// Requests per API key and UTC day in PostgreSQL, for the back-office's charts. As in LMDB, a request only
// counts in memory; each node adds its counts to the shared rows every FLUSH_INTERVAL_MS and when it closes
// (a crash loses at most one interval: statistics, not acknowledged data). A node's range() sees its own
// unwritten counts and the others' once they have flushed.
import { FLUSH_INTERVAL_MS, type KeyUsageDay, type KeyUsageEntry } from '../records';
import type { AsyncKeyUsageRepository } from '../interfaces';
import { allRowsByKey } from './keyset';
import type { Db } from './pool';

export class PgKeyUsageRepository implements AsyncKeyUsageRepository {
  /** "keyId day" -> requests not written yet. */
  private pending = new Map<string, number>();
  /** Batches taken from `pending` whose write has not finished: still counted by range(). */
  private readonly writingBatches = new Set<Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly db: Db, private readonly flushIntervalMs = FLUSH_INTERVAL_MS) {}

  record(keyId: string, at: Date): void {
    if (this.closed) return;
    const key = `${keyId} ${at.toISOString().slice(0, 10)}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      // A failed write (database down) loses these counts only; it must not take the process down.
      this.flush().catch(() => undefined);
    }, this.flushIntervalMs).unref();
  }

  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.pending;
    this.pending = new Map();
    if (batch.size === 0) return this.writing;
    this.writingBatches.add(batch);
    // Sorted: nodes flushing the same keys lock their rows in one order and cannot deadlock.
    const names = [...batch.keys()].sort();
    const write = this.writing.catch(() => undefined).then(() => this.db.query(`INSERT INTO key_usage AS u (key_id, day, requests)
      SELECT k, d, n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(k, d, n)
      ON CONFLICT (key_id, day) DO UPDATE SET requests = u.requests + EXCLUDED.requests`,
    [names.map((n) => n.slice(0, n.lastIndexOf(' '))), names.map((n) => n.slice(n.lastIndexOf(' ') + 1)), names.map((n) => batch.get(n)!)]))
      .finally(() => this.writingBatches.delete(batch));
    this.writing = write.then(() => undefined);
    return this.writing;
  }

  async range(keyId: string, fromDay: string, toDay: string): Promise<KeyUsageDay[]> {
    const byDay = new Map<string, number>();
    const { rows } = await this.db.query<{ day: string; requests: string }>(
      'SELECT day, requests FROM key_usage WHERE key_id = $1 AND day >= $2 AND day <= $3', [keyId, fromDay, toDay]);
    for (const r of rows) byDay.set(r.day, Number(r.requests));
    for (const batch of [...this.writingBatches, this.pending]) {
      for (const [name, requests] of batch) {
        const space = name.lastIndexOf(' ');
        const day = name.slice(space + 1);
        if (name.slice(0, space) === keyId && day >= fromDay && day <= toDay) byDay.set(day, (byDay.get(day) ?? 0) + requests);
      }
    }
    return [...byDay].sort(([a], [b]) => a.localeCompare(b)).map(([day, requests]) => ({ day, requests }));
  }

  async entries(): Promise<KeyUsageEntry[]> {
    const rows = await allRowsByKey<{ key_id: string; day: string; requests: string }>(this.db, 'key_usage', 'key_id, day, requests',
      ['key_id', 'day']);
    return rows.map((r) => ({ keyId: r.key_id, day: r.day, requests: Number(r.requests) }));
  }

  async importCounts(entries: readonly KeyUsageEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const { rowCount } = await this.db.query(`INSERT INTO key_usage AS u (key_id, day, requests)
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
      ON CONFLICT (key_id, day) DO UPDATE SET requests = EXCLUDED.requests WHERE u.requests < EXCLUDED.requests`,
    [entries.map((e) => e.keyId), entries.map((e) => e.day), entries.map((e) => e.requests)]);
    return rowCount ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}
