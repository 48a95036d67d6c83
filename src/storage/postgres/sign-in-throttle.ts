// The throttle's counters (src/licensing/sign-in-throttle.ts holds the rules: which keys, which limits) in
// PostgreSQL, so a guesser spreading attempts over the nodes gets each key's limit per window in all, not
// per node. The in-process throttle checks and then counts, which one event loop makes atomic; here tryBegin
// does both in one transaction under an advisory lock per key (taken in sorted order, so two attempts sharing
// keys cannot deadlock): attempts sent to several nodes at once cannot all pass the check while their
// passwords are being hashed.
import {
  limitOf, type SharedSignInThrottle, type ThrottleAttempt, type ThrottleKey, type ThrottleLimit,
} from '../interfaces';
import { lockKey } from './lock-keys';
import type { Db, Queryable } from './pool';

export interface SharedThrottleOptions {
  /** The limit and window of a key given by name only. */
  maxFailures: number;
  windowMs: number;
  now: () => number;
  /** Events older than this are pruned (the longest window of any key); default windowMs. */
  retentionMs?: number;
}

/** Events older than the retention are deleted at most this often per node (they no longer count anyway). */
const PRUNE_INTERVAL_MS = 60_000;

export class PgSignInThrottle implements SharedSignInThrottle {
  private lastPrune = 0;

  constructor(private readonly db: Db, private readonly options: SharedThrottleOptions) {
    if (!Number.isInteger(options.maxFailures) || options.maxFailures < 1) throw new RangeError('maxFailures must be >= 1');
  }

  async retryAfterSeconds(keys: readonly ThrottleKey[]): Promise<number> {
    return Math.ceil(await this.waitMs(this.db, this.limits(keys), this.options.now()) / 1000);
  }

  async tryBegin(keys: readonly ThrottleKey[]): Promise<{ attempt: ThrottleAttempt } | { retryAfterSeconds: number }> {
    const at = this.options.now();
    const limits = this.limits(keys);
    const unique = [...new Set(limits.map((l) => l.key))].sort();
    const outcome = await this.db.transaction(async (tx) => {
      for (const key of unique) await tx.query('SELECT pg_advisory_xact_lock($1)', [lockKey('sign-in-throttle', key)]);
      const wait = await this.waitMs(tx, limits, at);
      if (wait > 0) return { retryAfterSeconds: Math.ceil(wait / 1000) };
      const { rows } = await tx.query<{ id: string }>(`INSERT INTO sign_in_failures (key, at)
        SELECT k, $2 FROM unnest($1::text[]) AS x(k) RETURNING id`, [unique, new Date(at).toISOString()]);
      return { attempt: { keys: unique, at, ids: rows.map((r) => r.id) } };
    }, { retries: 2 });
    if (at - this.lastPrune >= PRUNE_INTERVAL_MS) {
      this.lastPrune = at;
      this.prune(at).catch(() => undefined);  // housekeeping only
    }
    return outcome;
  }

  async succeeded(attempt: ThrottleAttempt, clearKeys: string | readonly string[]): Promise<void> {
    const clear = typeof clearKeys === 'string' ? [clearKeys] : [...clearKeys];
    await this.db.query('DELETE FROM sign_in_failures WHERE id = ANY($1::bigint[]) OR key = ANY($2::text[])', [[...attempt.ids], clear]);
  }

  /** Deletes events older than the retention; returns how many. */
  async prune(now = this.options.now()): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM sign_in_failures WHERE at <= $1',
      [new Date(now - (this.options.retentionMs ?? this.options.windowMs)).toISOString()]);
    return rowCount ?? 0;
  }

  private limits(keys: readonly ThrottleKey[]): ThrottleLimit[] {
    return keys.map((k) => limitOf(k, this.options));
  }

  /**
   * How long until every key has fewer than its max events in its window: for a key at the limit, until its
   * max-th latest event leaves the window (the in-process throttle's rule).
   */
  private async waitMs(q: Queryable, limits: readonly ThrottleLimit[], now: number): Promise<number> {
    if (limits.length === 0) return 0;
    const { rows } = await q.query<{ at: Date; window_ms: string }>(`SELECT f.at, l.window_ms
      FROM unnest($1::text[], $2::int[], $3::bigint[]) AS l(key, max, window_ms)
      CROSS JOIN LATERAL (
        SELECT at FROM sign_in_failures s
        WHERE s.key = l.key AND s.at > $4::timestamptz - l.window_ms * interval '1 millisecond'
        ORDER BY s.at DESC, s.id DESC OFFSET l.max - 1 LIMIT 1) f`,
    [limits.map((l) => l.key), limits.map((l) => l.max), limits.map((l) => l.windowMs), new Date(now).toISOString()]);
    return rows.reduce((wait, r) => Math.max(wait, r.at.getTime() + Number(r.window_ms) - now), 0);
  }
}
