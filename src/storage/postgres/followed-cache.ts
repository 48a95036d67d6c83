// A node's copy of rows any node may change, trusted only while this node's change follower listens: each
// write the node learns of (its own, a notification, a delivered change) replaces or drops an entry, and
// a connection made or lost empties the cache, since notifications may have been missed meanwhile. A
// request's own read fills an entry only when nothing was written to the cache since that read began
// (token), so a read older than a delivered change never overwrites it.

export class FollowedCache<V> {
  private readonly entries = new Map<string, V>();
  private version = 0;
  private trusted = false;

  /** `maxEntries`: the oldest entry makes room past it (a miss costs one read, never a wrong answer). */
  constructor(private readonly maxEntries: number) {}

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
    if (!this.trusted || token !== this.version) return;
    this.store(key, value);
  }

  /** What the follower delivered or this node wrote: the entry as it is now. */
  set(key: string, value: V): void {
    this.version++;
    if (this.trusted) this.store(key, value);
  }

  delete(key: string): void {
    this.version++;
    this.entries.delete(key);
  }

  /** Empties the cache; from now on it is trusted when `on` (listening again) or not at all. */
  reset(on: boolean): void {
    this.version++;
    this.entries.clear();
    this.trusted = on;
  }

  private store(key: string, value: V): void {
    this.entries.delete(key);  // a refreshed entry moves to the young end
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, value);
  }
}
