// The sign-in throttle's events in this process (LMDB: one process serves a store, so memory is the whole
// truth for them); the counting rule is ../sign-in-throttle.ts's. One event loop holds the keys: an attempt's
// check and count run one after another, never interleaved with another attempt's.
import type { ThrottleAttempt, ThrottleLimit } from '../interfaces';
import type { ThrottleEventReads, ThrottleEvents } from '../sign-in-throttle';

/** Keys tracked at most; past it, keys with no event left in the retention go first, then the longest quiet. */
const DEFAULT_MAX_KEYS = 100_000;

export interface InProcessThrottleOptions {
  /** Events older than this no longer count for any key (the longest window); default one hour. */
  retentionMs?: number;
  maxKeys?: number;
}

interface Event {
  id: string;
  at: number;
}

export class InProcessThrottleEvents implements ThrottleEvents {
  /** Each key's events, oldest first; the map's order is the order of last event (eviction takes the front). */
  private readonly events = new Map<string, Event[]>();
  private held: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  private readonly maxKeys: number;
  private readonly retentionMs: number;

  constructor(options: InProcessThrottleOptions) {
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    this.retentionMs = options.retentionMs ?? 3_600_000;
  }

  exclusive<T>(_keys: readonly string[], fn: (events: ThrottleEventReads) => Promise<T>): Promise<T> {
    const run = this.held.catch(() => undefined).then(() => fn(this));
    this.held = run;
    return run;
  }

  async latest(limits: readonly ThrottleLimit[], now: number): Promise<number[][]> {
    return limits.map(({ key, max, windowMs }) => {
      const times: number[] = [];
      const events = this.events.get(key) ?? [];
      for (let i = events.length - 1; i >= 0 && times.length < max && events[i].at > now - windowMs; i--) times.push(events[i].at);
      return times;
    });
  }

  async add(keys: readonly string[], at: number): Promise<string[]> {
    const ids: string[] = [];
    for (const key of keys) {
      const events = (this.events.get(key) ?? []).filter((e) => e.at > at - this.retentionMs);
      const id = String(++this.nextId);
      events.push({ id, at });
      ids.push(id);
      // Re-inserted so that the map's order is the order of last event.
      this.events.delete(key);
      this.events.set(key, events);
    }
    this.evictOverflow(at);
    return ids;
  }

  async remove(attempt: ThrottleAttempt, clearKeys: readonly string[]): Promise<void> {
    const gone = new Set(attempt.ids);
    for (const key of attempt.keys) {
      const kept = (this.events.get(key) ?? []).filter((e) => !gone.has(e.id));
      if (kept.length === 0) this.events.delete(key);
      else this.events.set(key, kept);
    }
    for (const key of clearKeys) this.events.delete(key);
  }

  /** Keys tracked (memory stays bounded). */
  get size(): number {
    return this.events.size;
  }

  private evictOverflow(now: number): void {
    if (this.events.size <= this.maxKeys) return;
    for (const [key, events] of this.events) {
      if (events[events.length - 1].at <= now - this.retentionMs) this.events.delete(key);
    }
    // Still over: the longest-quiet tenth goes, so eviction is not paid again on the very next event.
    const excess = this.events.size - this.maxKeys;
    if (excess <= 0) return;
    const drop = Math.max(excess, Math.ceil(this.maxKeys / 10));
    let n = 0;
    for (const key of this.events.keys()) {
      if (n++ >= drop) break;
      this.events.delete(key);
    }
  }
}
