// Request counters per account and UTC day, exact across nodes: the check and the increment are one
// statement. The insert creates the day's row at 1; on conflict the update adds 1 only while used < limit,
// and PostgreSQL re-checks that condition on the row's latest version after waiting for any concurrent
// writer, so N requests on any number of nodes admit exactly min(N, limit). No row returned: refused.
import type { Plan } from '../../domain/accounts';
import type { QuotaEntry } from '../records';
import { limitOfPlan, type AsyncQuotaRepository, type MeterRequest, type MeterResult } from '../interfaces';
import { allRowsByKey } from './keyset';
import type { MeterCaches } from './meter-caches';
import type { Db } from './pool';

export class PgQuotaRepository implements AsyncQuotaRepository {
  /** `caches`: a following node's plans and persons' meta (./meter-caches.ts); unlimited requests they answer make no statement. */
  constructor(private readonly db: Db, private readonly caches?: MeterCaches) {}

  async tryConsume(accountId: string, day: string, limit: number): Promise<boolean> {
    if (limit <= 0) return false;
    const { rows } = await this.db.query(`INSERT INTO quota AS q (account_id, day, used) VALUES ($1, $2, 1)
      ON CONFLICT (account_id, day) DO UPDATE SET used = q.used + 1 WHERE q.used < $3
      RETURNING q.used`, [accountId, day, limit], 'face_check_quota_consume');
    return rows.length > 0;
  }

  /**
   * The plan read, the counter's check-and-increment (the same upsert as tryConsume, skipped when the plan's
   * limit is 0) and the person's meta in one statement. The counter's WHERE re-reads the limit from `lim`,
   * computed once, so the re-check after waiting for a concurrent writer is the one tryConsume makes.
   * The person is read in the statement's snapshot, taken when it starts: one removed before is absent.
   */
  async meter(request: MeterRequest): Promise<MeterResult> {
    const { accountId, day, limits, personId } = request;
    const caches = this.caches;
    const plan = caches?.plans.get(accountId);
    if (caches && plan !== undefined && limitOfPlan(limits, plan ?? undefined) === 0) {
      // Unlimited: nothing to count, so nothing to write; answered from what this node follows.
      if (personId === undefined) return { limit: 0, admitted: true };
      const person = caches.person(accountId, personId);
      if (person) return { limit: 0, admitted: true, person };
    }
    const planToken = caches?.plans.token() ?? -1;
    const personToken = caches?.personToken() ?? -1;
    const { rows } = await this.db.query<{ n: number; plan: Plan | null; admitted: boolean; created: Date | null; updated: Date | null;
      model_id: string | null }>(`WITH lim AS (
        SELECT CASE WHEN p.plan IS NULL THEN $3::int WHEN p.plan = 'paid' THEN $5::int ELSE $4::int END AS n, p.plan
        FROM (SELECT (SELECT plan FROM accounts WHERE account_id = $1) AS plan) p),
      counted AS (
        INSERT INTO quota AS q (account_id, day, used) SELECT $1, $2, 1 FROM lim WHERE lim.n > 0
        ON CONFLICT (account_id, day) DO UPDATE SET used = q.used + 1 WHERE q.used < (SELECT n FROM lim)
        RETURNING q.used)
      SELECT lim.n, lim.plan, (lim.n = 0 OR EXISTS (SELECT 1 FROM counted)) AS admitted, m.created, m.updated, m.model_id
      FROM lim LEFT JOIN persons m ON m.account_id = $1 AND m.person_id = $6::text`,
    [accountId, day, limits.noRecord, limits.free, limits.paid, personId ?? null], 'face_check_quota_meter');
    const r = rows[0];
    caches?.plans.fill(accountId, r.plan, planToken);
    if (caches && personId !== undefined && r.created && r.updated && r.model_id !== null) {
      caches.fillPerson(accountId, personId, { modelId: r.model_id, created: r.created, updated: r.updated }, personToken);
    }
    const result: MeterResult = { limit: r.n, admitted: r.admitted };
    if (r.admitted && personId !== undefined && r.created && r.updated && r.model_id !== null) {
      result.person = { personId, created: r.created.toISOString(), updated: r.updated.toISOString(), modelId: r.model_id };
    }
    return result;
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
