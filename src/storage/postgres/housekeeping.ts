// One housekeeping pass over a cluster's database: the change log pruned to the entries kept, expired sign-in
// sessions purged, expired request signatures and sign-in failures that left their window deleted. Every
// node runs passes on an interval (./cluster-housekeeping.ts); a pass first takes a transaction-scoped advisory
// try-lock, so one node works at a time and the others skip at once instead of queueing, and it does nothing
// when another node finished one less than `minGapMs` ago, so the work is done about once per interval for
// the whole cluster. The whole pass is one transaction on one connection, released at its end or when its
// node dies.
import { PgChangeLog } from './change-log';
import { HOUSEKEEPING_LOCK } from './lock-keys';
import { JoinedTransaction, type Db, type Queryable } from './pool';
import { PgReplayCache } from './replay-cache';
import { PgSessionRepository } from './sessions';
import { PgThrottleEvents } from './sign-in-throttle';

export interface HousekeepingSettings {
  /** Change-log entries kept ([index] change_log_keep, as LMDB prunes its own). */
  changeLogKeep: number;
  /** A session unused this long has ended ([accounts] session_idle_minutes). */
  sessionIdleMs: number;
  /** The throttle's events count this long at most (the longest of its windows: src/accounts/sign-in-throttle.ts). */
  signInWindowMs: number;
  /** A pass within this long after another node's finished one does nothing (0: always work). */
  minGapMs: number;
}

export type HousekeepingOutcome =
  | { ran: false; reason: 'another node is at it' | 'done recently' }
  | { ran: true; changesPruned: number; sessionsPurged: number; signaturesPruned: number; signInFailuresPruned: number };

/** Meta row: when the last pass finished (ISO 8601), so passes of several nodes are spaced by minGapMs. */
const LAST_PASS = 'housekeeping-last-pass';

/** Entries deleted per statement: a long-neglected log is pruned in steps, each well within the statement timeout. */
export const PRUNE_STEP = 20_000;

export async function housekeepOnce(db: Db, settings: HousekeepingSettings, now: Date): Promise<HousekeepingOutcome> {
  return db.transaction(async (tx): Promise<HousekeepingOutcome> => {
    const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [HOUSEKEEPING_LOCK]);
    if (!rows[0].locked) return { ran: false, reason: 'another node is at it' };
    const last = await lastPass(tx);
    if (last !== undefined && now.getTime() - last < settings.minGapMs) return { ran: false, reason: 'done recently' };
    const joined = new JoinedTransaction(tx);
    const outcome: HousekeepingOutcome = {
      ran: true,
      changesPruned: await pruneInSteps(new PgChangeLog(joined), settings.changeLogKeep),
      sessionsPurged: await new PgSessionRepository(joined).purgeExpired(now, settings.sessionIdleMs),
      signaturesPruned: await new PgReplayCache(joined).prune(now),
      signInFailuresPruned: await new PgThrottleEvents(joined, { retentionMs: settings.signInWindowMs, now: () => now.getTime() })
        .prune(now.getTime()),
    };
    await tx.query(`INSERT INTO meta (key, value) VALUES ($1, convert_to($2, 'UTF8'))
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [LAST_PASS, now.toISOString()]);
    return outcome;
  });
}

async function lastPass(q: Queryable): Promise<number | undefined> {
  const { rows } = await q.query<{ value: Buffer }>('SELECT value FROM meta WHERE key = $1', [LAST_PASS]);
  return rows[0] ? Date.parse(rows[0].value.toString('utf8')) : undefined;
}

/** Prunes the log to `keep` entries at most PRUNE_STEP at a time; returns how many went. */
async function pruneInSteps(log: PgChangeLog, keep: number): Promise<number> {
  let size = await log.size();
  let pruned = 0;
  while (size > keep) {
    const gone = await log.prune(Math.max(keep, size - PRUNE_STEP));
    if (gone === 0) break;
    pruned += gone;
    size -= gone;
  }
  return pruned;
}
