// Failed sign-ins counted per account (its e-mail address, registered or not) and per client address in a
// sliding window. At the limit, sign-in is refused until the oldest failure leaves the window, even with the
// right password: guessing then costs a window per few tries, whichever accounts or addresses are tried.
// An attempt counts as a failure from the moment it starts, and is taken back when it succeeds, so many
// attempts sent at once cannot all pass the check while their passwords are still being hashed.
//
// The counters live in this process: one node holds them exactly (LMDB: ./in-process-shared.ts). Several nodes
// share them in PostgreSQL instead (../postgres/sign-in-throttle.ts).

/** Keys tracked at most; past it, entries with no failure left in the window go first, then the oldest. */
const DEFAULT_MAX_KEYS = 100_000;

export interface ThrottleOptions {
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

export class SignInThrottle {
  /** Per key, the times of the latest failures (at most maxFailures, oldest first). */
  private readonly failures = new Map<string, number[]>();
  private readonly maxKeys: number;

  constructor(private readonly options: ThrottleOptions) {
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  }

  static accountKey(email: string): string {
    return `account:${email.trim().toLowerCase()}`;
  }

  static addressKey(address: string): string {
    return `address:${address}`;
  }

  /** Seconds until an attempt on `keys` is allowed again; 0 = allowed now. */
  retryAfterSeconds(keys: readonly string[]): number {
    const now = this.options.now();
    let waitMs = 0;
    for (const key of keys) {
      const times = this.recent(key, now);
      if (times.length >= this.options.maxFailures) waitMs = Math.max(waitMs, times[0] + this.options.windowMs - now);
    }
    return Math.ceil(waitMs / 1000);
  }

  /** Counts an attempt as failed now; call succeeded() with it if it turns out right. */
  begin(keys: readonly string[]): Attempt {
    const at = this.options.now();
    for (const key of keys) {
      const times = this.recent(key, at);
      times.push(at);
      if (times.length > this.options.maxFailures) times.splice(0, times.length - this.options.maxFailures);
      // Re-inserted so that the map's order is the order of last failure (eviction takes the front).
      this.failures.delete(key);
      this.failures.set(key, times);
    }
    this.evictOverflow(at);
    return { keys, at };
  }

  /** The attempt was right: its failures are taken back, and `clearKey`'s whole count (the account's) ends. */
  succeeded(attempt: Attempt, clearKey: string): void {
    for (const key of attempt.keys) {
      const times = this.failures.get(key);
      const i = times?.lastIndexOf(attempt.at) ?? -1;
      if (times && i >= 0) times.splice(i, 1);
      if (times?.length === 0) this.failures.delete(key);
    }
    this.failures.delete(clearKey);
  }

  /** Keys tracked (for tests: memory stays bounded). */
  get size(): number {
    return this.failures.size;
  }

  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key);
    if (!times) return [];
    const start = now - this.options.windowMs;
    while (times.length && times[0] <= start) times.shift();
    return times;
  }

  private evictOverflow(now: number): void {
    if (this.failures.size <= this.maxKeys) return;
    const start = now - this.options.windowMs;
    for (const [key, times] of this.failures) {
      if (times.length === 0 || times[times.length - 1] <= start) this.failures.delete(key);
    }
    // Still over: the longest-quiet tenth goes, so eviction is not paid again on the very next failure.
    const excess = this.failures.size - this.maxKeys;
    if (excess <= 0) return;
    const drop = Math.max(excess, Math.ceil(this.maxKeys / 10));
    let n = 0;
    for (const key of this.failures.keys()) {
      if (n++ >= drop) break;
      this.failures.delete(key);
    }
  }
}
