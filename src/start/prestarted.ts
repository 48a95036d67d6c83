// A resource that `face-check serve` begins making before the rest of the program is loaded
// (./early-start.ts) and that the start proper then takes, once. It is made for a key (what it was made
// from); a start that asks for another key gets a new one, and the early one is released.
export class Prestarted<T> {
  private started: { key: string; value: Promise<T> } | undefined;

  /** Starts making the resource for `key` now, unless one was started already. */
  begin(key: string, make: () => Promise<T>): void {
    if (this.started) return;
    const value = make();
    value.catch(() => undefined);  // taken and awaited by the start, which reports a failure
    this.started = { key, value };
  }

  /** Whether a resource begun early waits to be taken. */
  get waiting(): boolean {
    return this.started !== undefined;
  }

  /**
   * The resource begun for `key` (handed out once), else a new one from `make`. One begun for another key is
   * released with `release` once made.
   */
  take(key: string, make: () => Promise<T>, release: (value: T) => Promise<void>): Promise<T> {
    const started = this.started;
    this.started = undefined;
    if (started?.key === key) return started.value;
    if (started) started.value.then(release).catch(() => undefined);
    return make();
  }
}
