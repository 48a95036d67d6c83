// The device's usage report: requests answered per UTC day and operation (grant) since the last successful
// licence check. A check sends a snapshot; once that check succeeds exactly the snapshot is taken away, so
// requests answered while the check was on its way are kept for the next one, and a failed check loses
// nothing.
import type { Grant } from '../domain/grants';
import type { UsageEntry } from './licence-client';

/** The wire contract's bound on one check's usage list. */
export const MAX_USAGE_ENTRIES = 400;

export class LicenceUsage {
  /** "YYYY-MM-DD grant" -> requests. */
  private readonly counts = new Map<string, number>();

  record(grant: Grant, at: Date): void {
    const key = `${at.toISOString().slice(0, 10)} ${grant}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** The oldest days first, at most MAX_USAGE_ENTRIES entries (the rest go with a later check). */
  snapshot(): UsageEntry[] {
    return [...this.counts.entries()]
      .map(([key, requests]) => {
        const [day, operation] = key.split(' ') as [string, Grant];
        return { day, operation, requests };
      })
      .sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))
      .slice(0, MAX_USAGE_ENTRIES);
  }

  /** Takes away what a successful check reported. */
  drop(sent: readonly UsageEntry[]): void {
    for (const entry of sent) {
      const key = `${entry.day} ${entry.operation}`;
      const left = (this.counts.get(key) ?? 0) - entry.requests;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    }
  }
}
