// A licensed device's own record of the requests it answered, kept in its store until the cloud has
// acknowledged them (src/licensing/device/licence-usage.ts says when they are written and how they travel):
//   pending   - [day, operation] -> requests answered and not yet in a report;
//   reports   - this store's report series (random, made once), the last report number made, and the report
//               in flight: numbered counts moved out of pending, sent with every check until the cloud
//               acknowledged that number, then deleted.
// Moving counts into a report, adding to pending and deleting an acknowledged report are each one LMDB
// write transaction, so a crash between any two steps leaves every request counted in exactly one place.
import crypto from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';
import type { Grant } from '../../domain/grants';
import { MAX_DAY_REQUESTS, type TakenReport, type UsageReport, type UsageRow } from '../records';

export const DEVICE_USAGE_DB = 'device-usage';
export const DEVICE_USAGE_REPORTS_DB = 'device-usage-reports';

type DayKey = [string, string];

export class DeviceUsageRepository {
  private readonly root: RootDatabase;
  private readonly pending: Database<number, DayKey>;
  private readonly reports: Database<unknown, string>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.pending = root.openDB<number, DayKey>({ name: DEVICE_USAGE_DB });
    this.reports = root.openDB<unknown, string>({ name: DEVICE_USAGE_REPORTS_DB });
  }

  /** Adds the counts ("YYYY-MM-DD operation" -> requests) to pending in one transaction; resolves once committed. */
  async add(counts: ReadonlyMap<string, number>): Promise<void> {
    if (counts.size === 0) return;
    await this.root.transaction(() => {
      for (const [name, requests] of counts) {
        const [day, operation] = name.split(' ');
        const key: DayKey = [day, operation];
        this.pending.put(key, Math.min(MAX_DAY_REQUESTS, (this.pending.get(key) ?? 0) + requests));
      }
    });
  }

  /** The report in flight, if any. */
  inFlight(): UsageReport | undefined {
    return this.reports.get('in-flight') as UsageReport | undefined;
  }

  /** Pending counts, oldest day first. */
  pendingRows(): UsageRow[] {
    return rowsOf([...this.pending.getRange()]);
  }

  /** True when nothing is pending and no report is in flight. */
  isEmpty(): boolean {
    return this.inFlight() === undefined && [...this.pending.getKeys({ limit: 1 })].length === 0;
  }

  /**
   * The report in flight, else a new one made of the oldest pending counts (at most `maxRows` rows), moved out
   * of pending in the same transaction. Pending days before `keepFrom` (YYYY-MM-DD) are deleted and returned.
   */
  async takeReport(maxRows: number, now: Date, keepFrom: string): Promise<TakenReport> {
    return this.root.transaction((): TakenReport => {
      const dropped = rowsOf([...this.pending.getRange({ end: [keepFrom] })]);
      for (const row of dropped) this.pending.remove([row.day, row.operation]);
      const current = this.reports.get('in-flight') as UsageReport | undefined;
      if (current) return { report: current, dropped };
      const usage = rowsOf([...this.pending.getRange({ limit: maxRows })]);
      for (const row of usage) this.pending.remove([row.day, row.operation]);
      if (usage.length === 0) return { dropped };
      let series = this.reports.get('series') as string | undefined;
      if (series === undefined) {
        series = crypto.randomBytes(16).toString('base64url');
        this.reports.put('series', series);
      }
      const number = ((this.reports.get('last-number') as number | undefined) ?? 0) + 1;
      const report: UsageReport = { series, number, usage, made: now.toISOString() };
      this.reports.put('last-number', number);
      this.reports.put('in-flight', report);
      return { report, dropped };
    });
  }

  /** Deletes the report in flight if it is `number` (the cloud acknowledged it); true when deleted. */
  async acknowledge(number: number): Promise<boolean> {
    return this.root.transaction(() => {
      const current = this.reports.get('in-flight') as UsageReport | undefined;
      if (current?.number !== number) return false;
      this.reports.remove('in-flight');
      return true;
    });
  }
}

function rowsOf(entries: ReadonlyArray<{ key: DayKey; value: number }>): UsageRow[] {
  return entries.map(({ key, value }) => ({ day: key[0], operation: key[1] as Grant, requests: value }));
}
