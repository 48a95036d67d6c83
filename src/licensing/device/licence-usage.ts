// The device's usage: requests answered per UTC day and operation (grant), kept in the device's store
// (src/storage/lmdb/device-usage.ts) from the moment they are counted until the cloud acknowledged them.
//
// Acknowledged means answered: the licence gate counts a request before its answer is sent and the answer
// waits for the count's commit, so every answer a client received is counted on disk and survives a stop,
// a restart and kill -9 (the same commit an enrolment waits for). Counts of one event-loop turn share one
// transaction. A count that cannot be written (a failing disk) is kept in memory and tried again with the
// next one; the answer is not held back for it, since the operation it counts has already happened.
//
// At a check the pending counts become a numbered report (persisted) that is sent with every check until
// one succeeds: the cloud adds a report's number once and acknowledges a repeat without adding it, so an
// answer lost on the way back (or a device killed before it deleted the report) never counts twice.
import type { Grant } from '../../domain/grants';
import type { TakenReport, UsageReport, UsageRow } from '../../storage/records';

/** The wire contract's bound on one check's usage list. */
export const MAX_USAGE_ENTRIES = 400;
/**
 * Pending days older than this (by the board's clock) are dropped when a report is made, with one log line:
 * a device serves no longer than [licensing] document_valid_seconds (at most 365 days) without a good check,
 * and a good check takes its counts, so only a clock that jumped can leave older days.
 */
export const MAX_PENDING_DAYS = 400;

/** What the usage needs of the device's store (storage/device-usage.ts's repository). */
export interface UsageStore {
  add(counts: ReadonlyMap<string, number>): Promise<void>;
  takeReport(maxRows: number, now: Date, keepFrom: string): Promise<TakenReport>;
  acknowledge(number: number): Promise<boolean>;
  isEmpty(): boolean;
  pendingRows(): UsageRow[];
  inFlight(): UsageReport | undefined;
}

export class LicenceUsage {
  /** The counts of this event-loop turn ("YYYY-MM-DD grant" -> requests) and the promise of their commit. */
  private next: { counts: Map<string, number>; done: Promise<void> } | undefined;
  /** Counts whose write failed, written with the next batch. */
  private kept = new Map<string, number>();

  constructor(private readonly store: UsageStore, private readonly log: (line: string) => void) {}

  /** Counts one answered request; resolves once it is committed (or, the store failing, kept in memory). */
  record(grant: Grant, at: Date): Promise<void> {
    if (!this.next) {
      const counts = new Map<string, number>();
      this.next = { counts, done: new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.write(counts)) };
    }
    const key = `${at.toISOString().slice(0, 10)} ${grant}`;
    this.next.counts.set(key, (this.next.counts.get(key) ?? 0) + 1);
    return this.next.done;
  }

  /** Writes what was counted so far (the next report then holds it). */
  async flush(): Promise<void> {
    await this.next?.done;
    if (this.kept.size > 0) await this.write(new Map());
  }

  /** The report to send with a check (the one in flight, else the oldest pending counts); undefined when none. */
  async report(now: Date): Promise<TakenReport['report']> {
    await this.flush();
    const keepFrom = new Date(now.getTime() - MAX_PENDING_DAYS * 86_400_000).toISOString().slice(0, 10);
    const { report, dropped } = await this.store.takeReport(MAX_USAGE_ENTRIES, now, keepFrom);
    if (dropped.length > 0) {
      const requests = dropped.reduce((n, r) => n + r.requests, 0);
      this.log(`usage older than ${MAX_PENDING_DAYS} days was never acknowledged by the licence server: ` +
        `${requests} request(s) of ${dropped[0].day} to ${dropped[dropped.length - 1].day} dropped`);
    }
    return report;
  }

  /** The cloud acknowledged (or, for a report it does not believe, refused) report `number`: it is deleted. */
  async settle(number: number): Promise<void> {
    await this.store.acknowledge(number);
  }

  /** Whether anything is counted and not yet acknowledged. */
  unreported(): boolean {
    return this.next !== undefined || this.kept.size > 0 || !this.store.isEmpty();
  }

  /** Answered requests not yet acknowledged: counted this turn, kept after a failed write, pending and in flight. */
  unreportedRequests(): number {
    let n = 0;
    for (const map of [this.next?.counts, this.kept]) for (const v of map?.values() ?? []) n += v;
    for (const row of this.store.pendingRows()) n += row.requests;
    for (const row of this.store.inFlight()?.usage ?? []) n += row.requests;
    return n;
  }

  private async write(counts: Map<string, number>): Promise<void> {
    if (this.next?.counts === counts) this.next = undefined;
    const all = new Map(counts);
    for (const [key, n] of this.kept) all.set(key, (all.get(key) ?? 0) + n);
    const failing = this.kept.size > 0;
    this.kept = new Map();
    try {
      await this.store.add(all);
      if (failing) this.log('usage is written to the store again');
    } catch (err) {
      for (const [key, n] of all) this.kept.set(key, (this.kept.get(key) ?? 0) + n);
      if (!failing) this.log(`cannot write usage to the store (${(err as Error).message}): the counts are kept in memory and written with the next ones`);
    }
  }
}
