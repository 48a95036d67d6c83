// The sign-in throttle's events in PostgreSQL, so a guesser spreading attempts over the nodes gets each key's
// limit per window in all, not per node; the counting rule is ../sign-in-throttle.ts's. An attempt's check
// and count run in one transaction under an advisory lock per key (taken in sorted order, so two attempts
// sharing keys cannot deadlock): attempts sent to several nodes at once cannot all pass the check.
import type { ThrottleAttempt, ThrottleLimit } from '../interfaces';
import type { ThrottleEventReads, ThrottleEvents } from '../sign-in-throttle';
import { lockKey } from './lock-keys';
import type { Db, Queryable } from './pool';

export interface PgThrottleEventOptions {
  now: () => number;
  /** Events older than this are pruned (the longest window of any key). */
  retentionMs: number;
}

/** Events older than the retention are deleted at most this often per node (they no longer count anyway). */
const PRUNE_INTERVAL_MS = 60_000;

export class PgThrottleEvents implements ThrottleEvents {
  private lastPrune = 0;

  constructor(private readonly db: Db, private readonly options: PgThrottleEventOptions) {}

  exclusive<T>(keys: readonly string[], fn: (events: ThrottleEventReads) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      for (const key of [...keys].sort()) await tx.query('SELECT pg_advisory_xact_lock($1)', [lockKey('sign-in-throttle', key)]);
      return fn({ latest: (limits, now) => latestOn(tx, limits, now), add: (names, at) => this.addOn(tx, names, at) });
    }, { retries: 2 });
  }

  latest(limits: readonly ThrottleLimit[], now: number): Promise<number[][]> {
    return latestOn(this.db, limits, now);
  }

  async remove(attempt: ThrottleAttempt, clearKeys: readonly string[]): Promise<void> {
    await this.db.query('DELETE FROM sign_in_failures WHERE id = ANY($1::bigint[]) OR key = ANY($2::text[])', [[...attempt.ids], [...clearKeys]]);
  }

  /** Deletes events older than the retention; returns how many. */
  async prune(now = this.options.now()): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM sign_in_failures WHERE at <= $1',
      [new Date(now - this.options.retentionMs).toISOString()]);
    return rowCount ?? 0;
  }

  private async addOn(q: Queryable, keys: readonly string[], at: number): Promise<string[]> {
    const { rows } = await q.query<{ id: string }>(`INSERT INTO sign_in_failures (key, at)
      SELECT k, $2 FROM unnest($1::text[]) AS x(k) RETURNING id`, [[...keys], new Date(at).toISOString()]);
    if (at - this.lastPrune >= PRUNE_INTERVAL_MS) {
      this.lastPrune = at;
      this.prune(at).catch(() => undefined);  // housekeeping only
    }
    return rows.map((r) => r.id);
  }
}

/** Each limit's latest `max` events within its window, newest first: one statement for all the keys. */
async function latestOn(q: Queryable, limits: readonly ThrottleLimit[], now: number): Promise<number[][]> {
  if (limits.length === 0) return [];
  const { rows } = await q.query<{ i: string; times: Date[] }>(`SELECT l.i, ARRAY(
      SELECT s.at FROM sign_in_failures s
      WHERE s.key = l.key AND s.at > $4::timestamptz - l.window_ms * interval '1 millisecond'
      ORDER BY s.at DESC, s.id DESC LIMIT l.max) AS times
    FROM unnest($1::text[], $2::int[], $3::bigint[]) WITH ORDINALITY AS l(key, max, window_ms, i)`,
  [limits.map((l) => l.key), limits.map((l) => l.max), limits.map((l) => l.windowMs), new Date(now).toISOString()]);
  const latest: number[][] = limits.map(() => []);
  for (const r of rows) latest[Number(r.i) - 1] = r.times.map((t) => t.getTime());
  return latest;
}
