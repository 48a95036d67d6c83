// The throttle's counters in this process: events (failed sign-ins, registrations) per key in a sliding
// window, each key with its own limit and window (the rules that name the keys and set the limits are in
// src/licensing/sign-in-throttle.ts, for both backends). At a key's limit, an attempt that counts against it
// is refused until the oldest event leaves the window. An attempt counts from the moment it starts and a
// failure is taken back when the attempt succeeds, so many attempts sent at once cannot all pass the check
// while their passwords are still being hashed.
//
// One node holds these exactly (LMDB: ./in-process-shared.ts). Several nodes share them in PostgreSQL instead
// (../postgres/sign-in-throttle.ts).
import { limitOf, type ThrottleKey } from '../interfaces';

/** Keys tracked at most; past it, entries with no event left in the window go first, then the oldest. */
const DEFAULT_MAX_KEYS = 100_000;

export interface ThrottleOptions {
  /** The limit and window of a key given by name only (no ThrottleLimit). */
  maxFailures: number;
  windowMs: number;
  now: () => number;
  maxKeys?: number;
}

/** One attempt under way: the keys it counted against and when. */
export interface Attempt {
  keys: readonly string[];
  at: number;
}

interface Counter {
  /** The latest events (at most max, oldest first). */
  times: number[];
  max: number;
  windowMs: number;
}

export class SignInThrottle {
  private readonly counters = new Map<string, Counter>();
  private readonly maxKeys: number;

  constructor(private readonly options: ThrottleOptions) {
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  }

  /** Seconds until an attempt on `keys` is allowed again; 0 = allowed now. */
  retryAfterSeconds(keys: readonly ThrottleKey[]): number {
    const now = this.options.now();
    let waitMs = 0;
    for (const key of keys) {
      const limit = limitOf(key, this.options);
      const times = this.recent(limit.key, now, limit.windowMs);
      if (times.length >= limit.max) waitMs = Math.max(waitMs, times[times.length - limit.max] + limit.windowMs - now);
    }
    return Math.ceil(waitMs / 1000);
  }

  /** Counts an attempt (as failed) now; call succeeded() with it if it turns out right. */
  begin(keys: readonly ThrottleKey[]): Attempt {
    const at = this.options.now();
    const names: string[] = [];
    for (const key of keys) {
      const limit = limitOf(key, this.options);
      names.push(limit.key);
      const times = this.recent(limit.key, at, limit.windowMs);
      times.push(at);
      if (times.length > limit.max) times.splice(0, times.length - limit.max);
      // Re-inserted so that the map's order is the order of last event (eviction takes the front).
      this.counters.delete(limit.key);
      this.counters.set(limit.key, { times, max: limit.max, windowMs: limit.windowMs });
    }
    this.evictOverflow(at);
    return { keys: names, at };
  }

  /** The attempt was right: its failures are taken back, and the whole count of each of `clearKeys` ends. */
  succeeded(attempt: Attempt, clearKeys: string | readonly string[]): void {
    for (const key of attempt.keys) {
      const times = this.counters.get(key)?.times;
      const i = times?.lastIndexOf(attempt.at) ?? -1;
      if (times && i >= 0) times.splice(i, 1);
      if (times?.length === 0) this.counters.delete(key);
    }
    for (const key of typeof clearKeys === 'string' ? [clearKeys] : clearKeys) this.counters.delete(key);
  }

  /** Keys tracked (for tests: memory stays bounded). */
  get size(): number {
    return this.counters.size;
  }

  private recent(key: string, now: number, windowMs: number): number[] {
    const times = this.counters.get(key)?.times;
    if (!times) return [];
    const start = now - windowMs;
    while (times.length && times[0] <= start) times.shift();
    return times;
  }

  private evictOverflow(now: number): void {
    if (this.counters.size <= this.maxKeys) return;
    for (const [key, { times, windowMs }] of this.counters) {
      if (times.length === 0 || times[times.length - 1] <= now - windowMs) this.counters.delete(key);
    }
    // Still over: the longest-quiet tenth goes, so eviction is not paid again on the very next event.
    const excess = this.counters.size - this.maxKeys;
    if (excess <= 0) return;
    const drop = Math.max(excess, Math.ceil(this.maxKeys / 10));
    let n = 0;
    for (const key of this.counters.keys()) {
      if (n++ >= drop) break;
      this.counters.delete(key);
    }
  }
}
