// Request counters per account and UTC day, exact across nodes: the check and the increment are one
// statement. The insert creates the day's row at 1; on conflict the update adds 1 only while used < limit,
// and PostgreSQL re-checks that condition on the row's latest version after waiting for any concurrent
// writer, so N requests on any number of nodes admit exactly min(N, limit). No row returned: refused.
import type { QuotaEntry } from '../quota';
import type { AsyncQuotaRepository } from './interfaces';
import { allRowsByKey } from './keyset';
import type { Db } from './pool';

export class PgQuotaRepository implements AsyncQuotaRepository {
  constructor(private readonly db: Db) {}

  async tryConsume(accountId: string, day: string, limit: number): Promise<boolean> {
    if (limit <= 0) return false;
    const { rows } = await this.db.query(`INSERT INTO quota AS q (account_id, day, used) VALUES ($1, $2, 1)
      ON CONFLICT (account_id, day) DO UPDATE SET used = q.used + 1 WHERE q.used < $3
      RETURNING q.used`, [accountId, day, limit]);
    return rows.length > 0;
  }

  async used(accountId: string, day: string): Promise<number> {
    const { rows } = await this.db.query<{ used: number }>('SELECT used FROM quota WHERE account_id = $1 AND day = $2', [accountId, day]);
    return rows[0]?.used ?? 0;
  }

  async entries(): Promise<QuotaEntry[]> {
    const rows = await allRowsByKey<{ account_id: string; day: string; used: number }>(this.db, 'quota', 'account_id, day, used',
      ['account_id', 'day']);
    return rows.map((r) => ({ accountId: r.account_id, day: r.day, used: r.used }));
  }

  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  async importCounts(entries: readonly QuotaEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const { rowCount } = await this.db.query(`INSERT INTO quota AS q (account_id, day, used)
      SELECT * FROM unnest($1::text[], $2::text[], $3::int[])
      ON CONFLICT (account_id, day) DO UPDATE SET used = EXCLUDED.used WHERE q.used < EXCLUDED.used`,
    [entries.map((e) => e.accountId), entries.map((e) => e.day), entries.map((e) => e.used)]);
    return rowCount ?? 0;
  }
}
