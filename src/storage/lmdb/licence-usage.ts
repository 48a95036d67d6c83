// Requests a licensed device answered, per licence, UTC day and operation, as the device reports them at
// each check-in. Keys are [licenceId, day, operation], so one licence's days are one ordered range. A device
// numbers its reports; the last number added is kept per licence (with the device and the report series),
// so a report sent again after a lost answer is acknowledged without being added twice.
import type { Database, RootDatabase } from 'lmdb';
import type { Grant } from '../../domain/grants';
import { entriesWithPrefix } from './key-prefix';
import { raiseCounts } from './raise-counts';
import { type LicenceUsageEntry, type LicenceUsageReportEntry, MAX_DAY_REQUESTS, movedReportReplaces, reportAddedBefore, type UsageReportMark, type UsageRow } from '../records';

type UsageKey = [string, string, string];

export const LICENCE_USAGE_DB = 'licence-usage';
export const LICENCE_USAGE_REPORTS_DB = 'licence-usage-reports';

export class LicenceUsageRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<number, UsageKey>;
  /** licenceId -> the last numbered report added. */
  private readonly reports: Database<UsageReportMark, string>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.db = root.openDB<number, UsageKey>({ name: LICENCE_USAGE_DB });
    this.reports = root.openDB<UsageReportMark, string>({ name: LICENCE_USAGE_REPORTS_DB });
  }

  /**
   * A check-in's usage inside its write transaction: added, unless `report` names a report added before
   * (then nothing is). Returns whether the rows were added.
   */
  addReportWithin(licenceId: string, rows: readonly UsageRow[], report: UsageReportMark | undefined): boolean {
    if (report) {
      if (reportAddedBefore(this.reports.get(licenceId), report)) return false;
      this.reports.put(licenceId, { fingerprint: report.fingerprint, series: report.series, number: report.number });
    }
    this.addWithin(licenceId, rows);
    return true;
  }

  /** The last numbered report added for the licence. */
  lastReport(licenceId: string): UsageReportMark | undefined {
    return this.reports.get(licenceId);
  }

  /** Every licence's last numbered report, in licence order. */
  reportEntries(): LicenceUsageReportEntry[] {
    return [...this.reports.getRange()].map(({ key, value }) => ({ licenceId: key, fingerprint: value.fingerprint, series: value.series, number: value.number }));
  }

  /** Writes each moved mark where movedReportReplaces; returns how many were written. */
  async importReports(entries: readonly LicenceUsageReportEntry[]): Promise<number> {
    return this.root.transaction(() => {
      let written = 0;
      for (const { licenceId, ...mark } of entries) {
        if (!movedReportReplaces(this.reports.get(licenceId), mark)) continue;
        this.reports.put(licenceId, mark);
        written++;
      }
      return written;
    });
  }

  /** Adds the rows to the licence's counters in one transaction (each day's stops at MAX_DAY_REQUESTS). */
  async add(licenceId: string, rows: readonly UsageRow[]): Promise<void> {
    await this.root.transaction(() => this.addWithin(licenceId, rows));
  }

  /** add() for a caller already inside a write transaction (the licence check-in). */
  addWithin(licenceId: string, rows: readonly UsageRow[]): void {
    for (const row of rows) {
      if (row.requests === 0) continue;
      const key: UsageKey = [licenceId, row.day, row.operation];
      this.db.put(key, Math.min(MAX_DAY_REQUESTS, (this.db.get(key) ?? 0) + row.requests));
    }
  }

  /** The counts of `fromDay` to `toDay` (inclusive, YYYY-MM-DD), in day then operation order. */
  range(licenceId: string, fromDay: string, toDay: string): UsageRow[] {
    const rows: UsageRow[] = [];
    // Starts at the first day and stops at the first key past the last day or outside the licence.
    for (const { key, value } of this.db.getRange({ start: [licenceId, fromDay] })) {
      if (!Array.isArray(key) || key[0] !== licenceId || key[1] > toDay) break;
      rows.push({ day: key[1], operation: key[2] as Grant, requests: value });
    }
    return rows;
  }

  /** One day's counts by operation. */
  day(licenceId: string, day: string): Partial<Record<Grant, number>> {
    const out: Partial<Record<Grant, number>> = {};
    for (const { key, value } of entriesWithPrefix(this.db, [licenceId, day])) out[key[2] as Grant] = value;
    return out;
  }

  /** Every counter, in licence, day and operation order. */
  entries(): LicenceUsageEntry[] {
    return [...this.db.getRange()].map(({ key, value }) => ({ licenceId: key[0], day: key[1], operation: key[2] as Grant, requests: value }));
  }

  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  async importCounts(entries: readonly LicenceUsageEntry[]): Promise<number> {
    return raiseCounts(this.root, this.db, entries.map((e) => [[e.licenceId, e.day, e.operation] as UsageKey, e.requests] as const));
  }
}
