// Requests licensed devices answered, per licence, UTC day and operation, in PostgreSQL. Counts are added by
// one upsert; rows are summed per key and sorted first, since one statement may not touch a row twice and
// two transactions adding the same keys in the same order cannot deadlock.
import type { Grant } from '../../domain/grants';
import { MAX_DAY_REQUESTS, reportAddedBefore, type LicenceUsageEntry, type LicenceUsageReportEntry, type UsageReportMark, type UsageRow } from '../records';
import type { AsyncLicenceUsageRepository } from '../interfaces';
import { allRowsByKey } from './keyset';
import type { Db, Queryable } from './pool';

export class PgLicenceUsageRepository implements AsyncLicenceUsageRepository {
  constructor(private readonly db: Db) {}

  async add(licenceId: string, rows: readonly UsageRow[]): Promise<void> {
    await addLicenceUsage(this.db, licenceId, rows);
  }

  async range(licenceId: string, fromDay: string, toDay: string): Promise<UsageRow[]> {
    const { rows } = await this.db.query<{ day: string; operation: Grant; requests: string }>(`SELECT day, operation, requests
      FROM licence_usage WHERE licence_id = $1 AND day >= $2 AND day <= $3 ORDER BY day COLLATE "C", operation COLLATE "C"`,
    [licenceId, fromDay, toDay]);
    return rows.map((r) => ({ day: r.day, operation: r.operation, requests: Number(r.requests) }));
  }

  async entries(): Promise<LicenceUsageEntry[]> {
    const rows = await allRowsByKey<{ licence_id: string; day: string; operation: Grant; requests: string }>(this.db, 'licence_usage',
      'licence_id, day, operation, requests', ['licence_id', 'day', 'operation']);
    return rows.map((r) => ({ licenceId: r.licence_id, day: r.day, operation: r.operation, requests: Number(r.requests) }));
  }

  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  async importCounts(entries: readonly LicenceUsageEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const { rowCount } = await this.db.query(`INSERT INTO licence_usage AS u (licence_id, day, operation, requests)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
      ON CONFLICT (licence_id, day, operation) DO UPDATE SET requests = EXCLUDED.requests WHERE u.requests < EXCLUDED.requests`,
    [entries.map((e) => e.licenceId), entries.map((e) => e.day), entries.map((e) => e.operation), entries.map((e) => e.requests)]);
    return rowCount ?? 0;
  }

  async reportEntries(): Promise<LicenceUsageReportEntry[]> {
    const { rows } = await this.db.query<{ licence_id: string; fingerprint: string; series: string; number: string }>(
      'SELECT licence_id, fingerprint, series, number FROM licence_usage_reports ORDER BY licence_id COLLATE "C"');
    return rows.map((r) => ({ licenceId: r.licence_id, fingerprint: r.fingerprint, series: r.series, number: Number(r.number) }));
  }

  /** Writes each moved mark where the target has none, or the same device and series at a lower number (movedReportReplaces). */
  async importReports(entries: readonly LicenceUsageReportEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const { rowCount } = await this.db.query(`INSERT INTO licence_usage_reports AS r (licence_id, fingerprint, series, number, added_at)
      SELECT l, f, s, n, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS x(l, f, s, n)
      ON CONFLICT (licence_id) DO UPDATE SET number = EXCLUDED.number, added_at = EXCLUDED.added_at
      WHERE r.fingerprint = EXCLUDED.fingerprint AND r.series = EXCLUDED.series AND r.number < EXCLUDED.number`,
    [entries.map((e) => e.licenceId), entries.map((e) => e.fingerprint), entries.map((e) => e.series), entries.map((e) => e.number)]);
    return rowCount ?? 0;
  }

  async day(licenceId: string, day: string): Promise<Partial<Record<Grant, number>>> {
    const { rows } = await this.db.query<{ operation: Grant; requests: string }>(
      'SELECT operation, requests FROM licence_usage WHERE licence_id = $1 AND day = $2', [licenceId, day]);
    const out: Partial<Record<Grant, number>> = {};
    for (const r of rows) out[r.operation] = Number(r.requests);
    return out;
  }
}

/** Adds the rows to the licence's counters (inside the caller's transaction when `q` is one); each day's stops at MAX_DAY_REQUESTS. */
export async function addLicenceUsage(q: Queryable, licenceId: string, rows: readonly UsageRow[]): Promise<void> {
  const sums = new Map<string, number>();
  for (const row of rows) {
    if (row.requests === 0) continue;
    const key = `${row.day} ${row.operation}`;
    sums.set(key, Math.min(MAX_DAY_REQUESTS, (sums.get(key) ?? 0) + row.requests));
  }
  if (sums.size === 0) return;
  const keys = [...sums.keys()].sort();
  await q.query(`INSERT INTO licence_usage AS u (licence_id, day, operation, requests)
    SELECT $1, d, o, n FROM unnest($2::text[], $3::text[], $4::bigint[]) AS x(d, o, n)
    ON CONFLICT (licence_id, day, operation) DO UPDATE SET requests = LEAST($5::bigint, u.requests + EXCLUDED.requests)`,
  [licenceId, keys.map((k) => k.split(' ')[0]), keys.map((k) => k.split(' ')[1]), keys.map((k) => sums.get(k)!), MAX_DAY_REQUESTS]);
}

/**
 * A check-in's usage inside its transaction (the licence row locked): added, unless `report` names a report
 * added before (then nothing is). Returns whether the rows were added.
 */
export async function addReportedUsage(q: Queryable, licenceId: string, rows: readonly UsageRow[],
  report: UsageReportMark | undefined): Promise<boolean> {
  if (report) {
    const { rows: last } = await q.query<{ fingerprint: string; series: string; number: string }>(
      'SELECT fingerprint, series, number FROM licence_usage_reports WHERE licence_id = $1', [licenceId]);
    const mark = last[0] && { fingerprint: last[0].fingerprint, series: last[0].series, number: Number(last[0].number) };
    if (reportAddedBefore(mark, report)) return false;
    await q.query(`INSERT INTO licence_usage_reports (licence_id, fingerprint, series, number, added_at) VALUES ($1, $2, $3, $4, now())
      ON CONFLICT (licence_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, series = EXCLUDED.series, number = EXCLUDED.number,
      added_at = EXCLUDED.added_at`, [licenceId, report.fingerprint, report.series, report.number]);
  }
  await addLicenceUsage(q, licenceId, rows);
  return true;
}
