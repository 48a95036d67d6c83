// The sign-in throttle (src/licensing/sign-in-throttle.ts: failures per account and per client address in a
// sliding window) with its counters in PostgreSQL, so a guesser spreading attempts over the nodes gets
// max_failures per window in all, not per node. The in-process throttle checks and then counts, which one
// event loop makes atomic; here tryBegin does both in one transaction under an advisory lock per key (taken
// in sorted order, so two attempts sharing keys cannot deadlock): attempts sent to several nodes at once
// cannot all pass the check while their passwords are being hashed.
import type { SharedSignInThrottle, ThrottleAttempt } from './interfaces';
import { lockKey } from './lock-keys';
import type { Db, Queryable } from './pool';

export interface SharedThrottleOptions {
  maxFailures: number;
  windowMs: number;
  now: () => number;
}

/** Failures older than the window are deleted at most this often per node (they no longer count anyway). */
const PRUNE_INTERVAL_MS = 60_000;

export class PgSignInThrottle implements SharedSignInThrottle {
  private lastPrune = 0;

  constructor(private readonly db: Db, private readonly options: SharedThrottleOptions) {
    if (!Number.isInteger(options.maxFailures) || options.maxFailures < 1) throw new RangeError('maxFailures must be >= 1');
  }

  async retryAfterSeconds(keys: readonly string[]): Promise<number> {
    return Math.ceil(await this.waitMs(this.db, keys, this.options.now()) / 1000);
  }

  async tryBegin(keys: readonly string[]): Promise<{ attempt: ThrottleAttempt } | { retryAfterSeconds: number }> {
    const at = this.options.now();
    const unique = [...new Set(keys)].sort();
    const outcome = await this.db.transaction(async (tx) => {
      for (const key of unique) await tx.query('SELECT pg_advisory_xact_lock($1)', [lockKey('sign-in-throttle', key)]);
      const wait = await this.waitMs(tx, unique, at);
      if (wait > 0) return { retryAfterSeconds: Math.ceil(wait / 1000) };
      const { rows } = await tx.query<{ id: string }>(`INSERT INTO sign_in_failures (key, at)
        SELECT k, $2 FROM unnest($1::text[]) AS x(k) RETURNING id`, [unique, new Date(at).toISOString()]);
      return { attempt: { keys, at, ids: rows.map((r) => r.id) } };
    }, { retries: 2 });
    if (at - this.lastPrune >= PRUNE_INTERVAL_MS) {
      this.lastPrune = at;
      this.prune(at).catch(() => undefined);  // housekeeping only
    }
    return outcome;
  }

  async succeeded(attempt: ThrottleAttempt, clearKey: string): Promise<void> {
    await this.db.query('DELETE FROM sign_in_failures WHERE id = ANY($1::bigint[]) OR key = $2', [[...attempt.ids], clearKey]);
  }

  /** Deletes failures that left the window; returns how many. */
  async prune(now = this.options.now()): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM sign_in_failures WHERE at <= $1',
      [new Date(now - this.options.windowMs).toISOString()]);
    return rowCount ?? 0;
  }

  /**
   * How long until every key has fewer than maxFailures failures in the window: for a key at the limit, until
   * its maxFailures-th latest failure leaves it (the in-process throttle's rule).
   */
  private async waitMs(q: Queryable, keys: readonly string[], now: number): Promise<number> {
    const { rows } = await q.query<{ at: Date }>(`SELECT at FROM (
        SELECT at, row_number() OVER (PARTITION BY key ORDER BY at DESC, id DESC) AS n
        FROM sign_in_failures WHERE key = ANY($1::text[]) AND at > $2) recent
      WHERE n = $3`, [[...keys], new Date(now - this.options.windowMs).toISOString(), this.options.maxFailures]);
    return rows.reduce((wait, r) => Math.max(wait, r.at.getTime() + this.options.windowMs - now), 0);
  }
}
