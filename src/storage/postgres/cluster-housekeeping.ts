// The housekeeping of a node over the cluster's PostgreSQL database: a pass (./housekeeping.ts) every [index]
// snapshot_interval_s, the interval at which an LMDB service prunes its change log, with the settings LMDB
// uses: [index] change_log_keep entries kept, sessions ended by [accounts] session_idle_minutes, the
// throttle's counts kept for their longest window (`signInWindowMs`, which the throttle's rules in
// src/accounts/sign-in-throttle.ts set). Every node runs it; the pass's lock and its spacing make one node
// do the work per interval. A pass that fails (the database unreachable) is logged and tried again at the
// next interval: housekeeping never takes a node down.
import type { Config } from '../../config/types';
import { housekeepOnce, type HousekeepingOutcome, type HousekeepingSettings } from './housekeeping';
import type { Db } from './pool';

export interface HousekeepingLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export function housekeepingSettingsOf(config: Config, signInWindowMs: number): HousekeepingSettings {
  const intervalMs = config.index.snapshot_interval_s * 1000;
  return {
    changeLogKeep: config.index.change_log_keep,
    sessionIdleMs: config.accounts.session_idle_minutes * 60_000,
    signInWindowMs,
    // A little under the interval: nodes' timers drift, and a pass must not be skipped for a few milliseconds.
    minGapMs: Math.floor(intervalMs * 0.9),
  };
}

/** The first pass comes this soon after the start (or after one interval, if shorter): a node restarted more
 *  often than the interval still does its share. */
const FIRST_PASS_DELAY_MS = 60_000;

export class ClusterHousekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<HousekeepingOutcome | undefined> | undefined;
  private stopped = false;

  constructor(private readonly db: Db, private readonly settings: HousekeepingSettings, private readonly intervalMs: number,
    private readonly log: () => HousekeepingLog | undefined, private readonly now: () => Date = () => new Date()) {}

  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(Math.min(this.intervalMs, FIRST_PASS_DELAY_MS));
  }

  /** One pass now (after the one in progress, if any); undefined when it failed (logged). */
  async runNow(): Promise<HousekeepingOutcome | undefined> {
    const previous = this.running ?? Promise.resolve(undefined);
    const run = previous.then(() => this.pass());
    this.running = run;
    try {
      return await run;
    } finally {
      if (this.running === run) this.running = undefined;
    }
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** The next pass after `delayMs`; each pass schedules the next when it ends, so passes never overlap. */
  private schedule(delayMs: number): void {
    // unref: the timer never keeps a stopping process alive.
    this.timer = setTimeout(() => {
      void this.runNow().then(() => { if (!this.stopped) this.schedule(this.intervalMs); });
    }, delayMs).unref();
  }

  private async pass(): Promise<HousekeepingOutcome | undefined> {
    try {
      const outcome = await housekeepOnce(this.db, this.settings, this.now());
      if (outcome.ran && outcome.changesPruned + outcome.sessionsPurged + outcome.signaturesPruned + outcome.signInFailuresPruned > 0) {
        this.log()?.info({
          changes_pruned: outcome.changesPruned, sessions_purged: outcome.sessionsPurged,
          signatures_pruned: outcome.signaturesPruned, sign_in_failures_pruned: outcome.signInFailuresPruned,
        }, 'housekeeping');
      }
      return outcome;
    } catch (err) {
      this.log()?.warn({ err: (err as Error).message }, 'housekeeping failed; trying again at the next interval');
      return undefined;
    }
  }
}

/** The housekeeping of a cloud node over `db` (not started). */
export function clusterHousekeeping(db: Db, config: Config, signInWindowMs: number, log: () => HousekeepingLog | undefined): ClusterHousekeeping {
  return new ClusterHousekeeping(db, housekeepingSettingsOf(config, signInWindowMs), config.index.snapshot_interval_s * 1000, log);
}
