// The sign-in throttle's counting rule, for both backends: events (failed sign-ins, registrations) per key in
// a sliding window, each key with its own limit and window (the rules that name the keys and set the limits
// are src/accounts/sign-in-throttle.ts's). At a key's limit, an attempt that counts against it is refused
// until the oldest of its latest `max` events leaves the window. An attempt counts from the moment it starts
// and is taken back when it succeeds, so many attempts sent at once cannot all pass the check while their
// passwords are still being hashed: the check and the count are one step, held against every other attempt
// on the same keys (ThrottleEvents.exclusive). The backend only keeps the events: in this process on LMDB
// (./lmdb/sign-in-throttle.ts), shared by every node in PostgreSQL (./postgres/sign-in-throttle.ts).
import { limitOf, type SharedSignInThrottle, type ThrottleAttempt, type ThrottleKey, type ThrottleLimit } from './interfaces';

/** The events a backend keeps for the throttle. */
export interface ThrottleEventReads {
  /** For each limit, the times (ms) of its key's latest `max` events after `now - windowMs`, newest first. */
  latest(limits: readonly ThrottleLimit[], now: number): Promise<number[][]>;
  /** Counts one event at `at` for each key; returns the handles to take them back by. */
  add(keys: readonly string[], at: number): Promise<string[]>;
}

export interface ThrottleEvents extends Pick<ThrottleEventReads, 'latest'> {
  /** Runs `fn` with the events of `keys` held: no other attempt on them (on any node) reads or adds meanwhile. */
  exclusive<T>(keys: readonly string[], fn: (events: ThrottleEventReads) => Promise<T>): Promise<T>;
  /** Takes back the attempt's events and ends the whole count of each of `clearKeys`. */
  remove(attempt: ThrottleAttempt, clearKeys: readonly string[]): Promise<void>;
}

export interface ThrottleOptions {
  /** The limit and window of a key given by name only (no ThrottleLimit). */
  maxFailures: number;
  windowMs: number;
  now: () => number;
}

export class SignInThrottle implements SharedSignInThrottle {
  constructor(private readonly events: ThrottleEvents, private readonly options: ThrottleOptions) {
    if (!Number.isInteger(options.maxFailures) || options.maxFailures < 1) throw new RangeError('maxFailures must be >= 1');
  }

  async retryAfterSeconds(keys: readonly ThrottleKey[]): Promise<number> {
    const now = this.options.now();
    const limits = this.limits(keys);
    return Math.ceil(waitMs(limits, await this.events.latest(limits, now), now) / 1000);
  }

  async tryBegin(keys: readonly ThrottleKey[]): Promise<{ attempt: ThrottleAttempt } | { retryAfterSeconds: number }> {
    const at = this.options.now();
    const limits = this.limits(keys);
    const names = [...new Set(limits.map((l) => l.key))].sort();
    return this.events.exclusive(names, async (events) => {
      const wait = waitMs(limits, await events.latest(limits, at), at);
      if (wait > 0) return { retryAfterSeconds: Math.ceil(wait / 1000) };
      return { attempt: { keys: names, at, ids: await events.add(names, at) } };
    });
  }

  async succeeded(attempt: ThrottleAttempt, clearKeys: string | readonly string[]): Promise<void> {
    await this.events.remove(attempt, typeof clearKeys === 'string' ? [clearKeys] : clearKeys);
  }

  private limits(keys: readonly ThrottleKey[]): ThrottleLimit[] {
    return keys.map((k) => limitOf(k, this.options));
  }
}

/** How long until every key has fewer than its max events in its window: for a key at its limit, until its max-th latest event leaves. */
function waitMs(limits: readonly ThrottleLimit[], latest: readonly number[][], now: number): number {
  return limits.reduce((wait, limit, i) => {
    const times = latest[i];
    return times.length >= limit.max ? Math.max(wait, times[limit.max - 1] + limit.windowMs - now) : wait;
  }, 0);
}
