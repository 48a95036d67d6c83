// When snapshots are written, off the request path and one at a time: soon after a start that rebuilt an
// account or replayed many of its changes; every [index] snapshot_interval_s for accounts with at least
// snapshot_min_changes changes since their snapshot; and at an orderly stop for every account changed since,
// within snapshot_stop_timeout_s. An account's codes and the store's sequence are taken under the account's
// lock (the one its writes and gallery updates hold), so every change of it up to that sequence is in the
// snapshot. A failed write is logged and leaves the previous snapshot; requests never wait for one.
// Without snapshots ([index] snapshot = false) it only keeps the change log bounded.
import fs from 'node:fs';
import path from 'node:path';

import type { LocalPersonRepository as PersonRepository } from '../../storage/interfaces';
import type { Galleries } from '../galleries';
import { IndexGallery } from '../index-gallery';
import { snapshotFileName, type SnapshotPlace } from './place';
import type { RestoreReport } from './restore';
import { SnapshotAbandoned, writeSnapshot } from './write';

export interface SnapshotSettings {
  intervalS: number;
  minChanges: number;
  stopTimeoutS: number;
  changeLogKeep: number;
}

export interface SnapshotLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface SnapshotSchedulerDeps {
  galleries: Galleries;
  persons: PersonRepository;
  /** The account lock of person writes (Store.exclusive). */
  exclusive<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  modelId: string;
  /** Where snapshots go; undefined: none are written, the log is only pruned. */
  place: SnapshotPlace | undefined;
  settings: SnapshotSettings;
  log: SnapshotLogger;
}

export interface WrittenSnapshot {
  accountId: string;
  count: number;
  bytes: number;
  seq: number;
  /** Export under the lock, then sealing and writing. */
  exportMs: number;
  writeMs: number;
}

export class SnapshotScheduler {
  /** The sequence each account's snapshot on disk reflects (0: none). */
  private readonly snapshotSeq = new Map<string, number>();
  /** Changes of each account after its snapshot, as far as the log has been scanned. */
  private readonly pending = new Map<string, number>();
  private scanned = 0;
  private timer: NodeJS.Timeout | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private deadline = Infinity;
  private stopped = false;

  constructor(private readonly deps: SnapshotSchedulerDeps) {}

  /** Takes the start's outcome and begins: accounts rebuilt or with many changes replayed are written soon. */
  begin(report: RestoreReport): void {
    this.scanned = this.deps.persons.changes.lastChange();
    const due: string[] = [];
    for (const r of report.accounts) {
      this.snapshotSeq.set(r.accountId, r.source === 'snapshot' ? r.seq : 0);
      this.pending.set(r.accountId, r.source === 'snapshot' ? r.replayed : r.size);
      if (r.size > 0 && (r.source === 'rebuild' || r.replayed >= this.deps.settings.minChanges)) due.push(r.accountId);
    }
    if (due.length && this.deps.place) void this.enqueue(due);
    this.timer = setInterval(() => { void this.tick(); }, this.deps.settings.intervalS * 1000);
    this.timer.unref();
  }

  /** Scans the log, writes the accounts with enough changes, prunes the log. */
  async tick(minChanges = this.deps.settings.minChanges): Promise<WrittenSnapshot[]> {
    this.scan();
    const due = [...this.pending].filter(([, n]) => n >= minChanges).map(([a]) => a);
    const written = this.deps.place ? await this.enqueue(due) : [];
    await this.queued(async () => {
      try {
        await this.deps.persons.changes.prune(this.deps.settings.changeLogKeep);
      } catch (err) {
        this.deps.log.warn({ err: (err as Error).message }, 'change log not pruned');
      }
    });
    return written;
  }

  /** Stops the timer and writes every account changed since its snapshot, within snapshot_stop_timeout_s. */
  async stop(): Promise<WrittenSnapshot[]> {
    if (this.stopped) return [];
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.deadline = performance.now() + this.deps.settings.stopTimeoutS * 1000;
    if (!this.deps.place) return [];
    this.scan();
    const due = [...this.pending].filter(([, n]) => n > 0).map(([a]) => a);
    return this.enqueue(due, true);
  }

  /** Writes one account's snapshot now (after any write in progress). */
  writeNow(accountId: string): Promise<WrittenSnapshot | undefined> {
    const place = this.deps.place;
    return this.queued(async () => (place ? this.write(accountId, place) : undefined));
  }

  private scan(): void {
    for (const c of this.deps.persons.changes.changesSince(this.scanned)) {
      if (c.seq > (this.snapshotSeq.get(c.accountId) ?? 0)) this.pending.set(c.accountId, (this.pending.get(c.accountId) ?? 0) + 1);
      this.scanned = c.seq;
    }
  }

  /** Queues the accounts' writes (one at a time, after any write in progress); resolves with those written. */
  private async enqueue(accounts: string[], stopping = false): Promise<WrittenSnapshot[]> {
    const runs = accounts.map((accountId) => this.queued(async () => {
      if ((this.stopped && !stopping) || performance.now() >= this.deadline) return undefined;
      try {
        return await this.write(accountId, this.deps.place!);
      } catch (err) {
        const abandoned = err instanceof SnapshotAbandoned;
        this.deps.log.warn({ account: accountId, err: (err as Error).message },
          abandoned ? 'gallery snapshot abandoned at the stop deadline; the previous one stays' : 'gallery snapshot not written; the previous one stays');
        return undefined;
      }
    }));
    return (await Promise.all(runs)).filter((w): w is WrittenSnapshot => w !== undefined);
  }

  private queued<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async write(accountId: string, place: SnapshotPlace): Promise<WrittenSnapshot | undefined> {
    const { galleries, persons } = this.deps;
    const t0 = performance.now();
    let seq = 0;
    let seqEntry: [string, string] | undefined;
    const dump = await this.deps.exclusive(accountId, async () => {
      seq = persons.changes.lastChange();
      const entry = persons.changes.at(seq);
      seqEntry = entry && [entry.accountId, entry.personId];
      const gallery = galleries.existing(accountId);
      return gallery instanceof IndexGallery ? gallery.exportCodes() : undefined;
    });
    const exportMs = performance.now() - t0;
    const file = snapshotFileName(accountId);
    let bytes = 0;
    if (!dump || dump.count === 0) {
      await fs.promises.rm(path.join(place.dir, file), { force: true });  // nobody left: nothing to load
    } else {
      bytes = await writeSnapshot({
        dir: place.dir, file, accountId, modelId: this.deps.modelId, seq, seqEntry, dump, keyFor: place.keyFor, keyWrap: place.keyWrap?.(),
        abandoned: () => performance.now() >= this.deadline,
      });
    }
    this.snapshotSeq.set(accountId, seq);
    let after = 0;
    for (const c of persons.changes.changesSince(seq)) {
      if (c.seq > this.scanned) break;
      if (c.accountId === accountId) after++;
    }
    this.pending.set(accountId, after);
    const w: WrittenSnapshot = { accountId, count: dump?.count ?? 0, bytes, seq, exportMs, writeMs: performance.now() - t0 - exportMs };
    this.deps.log.info({ account: accountId, persons: w.count, bytes, seq, export_ms: Math.round(exportMs), write_ms: Math.round(w.writeMs) }, 'gallery snapshot written');
    return w;
  }
}
