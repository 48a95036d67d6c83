// A node's copy of rows any node may change, trusted only while this node's change follower listens: each
// write the node learns of (its own, a notification, a delivered change) replaces or drops an entry, and
// a connection made or lost empties the cache, since notifications may have been missed meanwhile. A
// request's own read fills an entry only when nothing was written to the cache since that read began
// (token), so a read older than a delivered change never overwrites it. A bulk fill (./meter-caches.ts)
// reads many entries over many statements: it keeps none whose key was written since the fill began.

/**
 * Told of every value that leaves the cache or is not taken (refused, replaced, evicted, deleted), and when
 * it is emptied: for values that stand for storage of their own (./meter-caches.ts's slots).
 */
export interface CacheValueOwner<V> {
  release(value: V): void;
  releaseAll(): void;
}

/** One bulk fill of a cache: `put` what a read made after beginFill found. */
export interface BulkFill<V> {
  /** Keeps the entry unless its key was written since the fill began; false once the cache is full or was reset (stop). */
  put(key: string, value: V): boolean;
  /** The cache was reset since the fill began (a connection lost or made): what it read may be stale. */
  readonly stale: boolean;
  /** Entries this fill kept so far. */
  readonly kept: number;
  end(): void;
}

export class FollowedCache<V> {
  private readonly entries = new Map<string, V>();
  private version = 0;
  private trusted = false;
  /** Bumped by every reset: a bulk fill begun before one stops. */
  private epoch = 0;
  /** Keys written while a bulk fill runs (none kept otherwise), and how many fills run. */
  private written: Set<string> | undefined;
  private fills = 0;

  /** `maxEntries`: the oldest entry makes room past it (a miss costs one read, never a wrong answer). */
  constructor(private readonly maxEntries: number, private readonly owner?: CacheValueOwner<V>) {}

  get size(): number {
    return this.entries.size;
  }

  get isTrusted(): boolean {
    return this.trusted;
  }

  /** The entry while the cache is trusted; undefined when absent or not trusted. */
  get(key: string): V | undefined {
    return this.trusted ? this.entries.get(key) : undefined;
  }

  /** Taken before a read whose result may fill the cache (fill). */
  token(): number {
    return this.trusted ? this.version : -1;
  }

  /** Keeps what a read begun at `token` found, unless the cache changed or stopped being trusted since. */
  fill(key: string, value: V, token: number): void {
    if (!this.trusted || token !== this.version) this.owner?.release(value);
    else this.store(key, value);
  }

  /** What the follower delivered or this node wrote: the entry as it is now. */
  set(key: string, value: V): void {
    this.version++;
    this.written?.add(key);
    if (this.trusted) this.store(key, value);
    else this.owner?.release(value);
  }

  delete(key: string): void {
    this.version++;
    this.written?.add(key);
    this.drop(key);
  }

  /** Empties the cache; from now on it is trusted when `on` (listening again) or not at all. */
  reset(on: boolean): void {
    this.version++;
    this.epoch++;
    this.entries.clear();
    this.owner?.releaseAll();
    this.trusted = on;
  }

  /**
   * Begins a fill from reads made from now on: an entry it puts is kept unless its key was written since
   * (the write is newer than, or as new as, the read), and the fill stops at a reset or once the cache
   * holds maxEntries. Entries already cached are refreshed. Must be ended.
   */
  beginFill(): BulkFill<V> {
    const epoch = this.epoch;
    this.fills++;
    this.written ??= new Set();
    const written = this.written;
    let ended = false;
    let kept = 0;
    const cache = this;
    return {
      get stale() { return cache.epoch !== epoch; },
      get kept() { return kept; },
      put(key: string, value: V): boolean {
        const go = !ended && cache.epoch === epoch && cache.trusted;
        const full = go && cache.entries.size >= cache.maxEntries && !cache.entries.has(key);
        if (!go || full || written.has(key)) {
          cache.owner?.release(value);
          return go && !full;
        }
        const old = cache.entries.get(key);
        if (old !== undefined) cache.owner?.release(old);
        cache.entries.set(key, value);
        kept++;
        return true;
      },
      end() {
        if (ended) return;
        ended = true;
        if (--cache.fills === 0) cache.written = undefined;
      },
    };
  }

  private store(key: string, value: V): void {
    this.drop(key);  // a refreshed entry moves to the young end
    if (this.entries.size >= this.maxEntries) this.drop(this.entries.keys().next().value as string);
    this.entries.set(key, value);
  }

  private drop(key: string): void {
    const old = this.entries.get(key);
    if (old === undefined) return;
    this.entries.delete(key);
    this.owner?.release(old);
  }
}
