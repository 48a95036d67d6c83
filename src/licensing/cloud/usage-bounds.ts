// What a device's usage report may claim: rows only for days the licence could have been used (from its
// creation to now, each widened by the allowance for a device's clock), and on each day no more requests
// than a device could have answered in the part of that day inside that span. A report beyond either is a
// forged or broken one: the check is refused and nothing of it counted.
import { MAX_REQUESTS_PER_SECOND, type UsageRow } from '../../storage/records';

/** How far a device's clock may be from the cloud's before its days are not believed. */
export const USAGE_CLOCK_ALLOWANCE_MS = 24 * 3_600_000;

const DAY_MS = 86_400_000;

/** Why the rows cannot be a real device's usage of a licence created at `created`, or undefined. */
export function implausibleUsage(rows: readonly UsageRow[], created: string, now: Date): string | undefined {
  const from = Date.parse(created) - USAGE_CLOCK_ALLOWANCE_MS;
  const to = now.getTime() + USAGE_CLOCK_ALLOWANCE_MS;
  for (const [i, row] of rows.entries()) {
    const dayStart = Date.parse(`${row.day}T00:00:00Z`);
    const overlapMs = Math.min(dayStart + DAY_MS, to) - Math.max(dayStart, from);
    if (overlapMs <= 0) {
      return `usage[${i}].day: ${row.day} is outside the licence's life (${new Date(from).toISOString().slice(0, 10)} to ${new Date(to).toISOString().slice(0, 10)})`;
    }
    const most = Math.ceil((overlapMs / 1000) * MAX_REQUESTS_PER_SECOND);
    if (row.requests > most) return `usage[${i}].requests: more than a device can answer on ${row.day} (${most})`;
  }
  return undefined;
}
