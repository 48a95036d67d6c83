// The one loader of sealed templates at a start, for both sources of sealed bytes: the PostgreSQL node's
// COPY streams (storage/postgres/copy-unsealer.ts) and the snapshot files (matching/snapshot/read.ts). Each
// source cuts its bytes into units (a batch of rows, a group of chunks) and hands each unit's opening to the
// loader: a worker thread (./worker-pool.ts) or the addon's threads open it, off the event loop. The loader
// bounds the openings in flight (memory, and room on the thread pool for the index's loads), lets the source
// pause its reading while too many wait, hands the opened blocks to the gallery or index one at a time, and
// keeps the failure of the unit first in the source's order: the same error whichever unit opened first.
// After abort() nothing more is delivered; settle() resolves only once nothing more can be, so a caller that
// drops its gallery never has an opening still writing into it.

/** Which opener a start uses: the addon's ('native') or JavaScript's (in worker threads or on this thread). */
export type Unsealer = 'native' | 'js';

/** `requested`, else the environment's choice ('js' or anything else for native), native only where available. */
export function chooseUnsealer(requested: Unsealer | undefined, fromEnv: string | undefined, nativeAvailable: () => boolean): Unsealer {
  const want = requested ?? (fromEnv === 'js' ? 'js' : 'native');
  return want === 'native' && nativeAvailable() ? 'native' : 'js';
}

/** At most `most` tasks at once, the others in the order they came; one bound may serve several loaders. */
export class Turns {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly watchers: Array<{ most: number; resolve: () => void }> = [];

  constructor(private readonly most = Infinity) {}

  /** Tasks running or waiting for their turn. */
  get queued(): number {
    return this.running + this.waiting.length;
  }

  /** Resolves once at most `most` tasks are queued. */
  below(most: number): Promise<void> {
    if (this.queued <= most) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ most, resolve }));
  }

  async run(task: () => Promise<void>): Promise<void> {
    if (this.running < this.most) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));  // the turn is handed over
    try {
      await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
      for (let i = this.watchers.length - 1; i >= 0; i--) {
        if (this.queued <= this.watchers[i].most) this.watchers.splice(i, 1)[0].resolve();
      }
    }
  }
}

export class SealedLoader {
  private readonly pending = new Set<Promise<void>>();
  private delivering: Promise<void> = Promise.resolve();
  private failure: { rank: number; error: unknown } | undefined;
  private wake: (() => void) | undefined;
  /** Set by abort(). */
  aborted = false;
  /** Blocks opened and not yet delivered (the one being delivered included). */
  backlog = 0;

  /** The openings take `turns` (a bound of openings in flight, which several loaders may share). */
  constructor(readonly turns = new Turns()) {}

  /** Whether the load failed or was aborted: the source stops reading. */
  get stopped(): boolean {
    return this.aborted || this.failure !== undefined;
  }

  /**
   * Opens one unit: `open` runs in its turn (not at all once aborted; still after a failure, as a unit
   * earlier in the source may fail too), and what it resolves with goes to `deliver`, one delivery at a
   * time, in the order the units opened, none once the load stopped. A unit that fails, in `open` or in
   * `deliver`, fails the load with `rank` (its place in the source; the lowest is reported).
   */
  add<B>(rank: number, open: () => Promise<B | undefined>, deliver: (block: B) => Promise<void> | void): void {
    const task = this.turns.run(async () => {
      if (this.aborted) return;
      const block = await open();
      if (block === undefined || this.stopped) return;
      this.backlog++;
      this.delivering = this.delivering.then(() => (this.stopped ? undefined : deliver(block)))
        .catch((err: unknown) => this.fail(rank, err))
        .finally(() => {
          this.backlog--;
          this.wake?.();
        });
    }).catch((err: unknown) => this.fail(rank, err)).finally(() => {
      this.pending.delete(task);
      this.wake?.();
    });
    this.pending.add(task);
  }

  /** Records a failure at `rank`; the loader stops. */
  fail(rank: number, error: unknown): void {
    if (!this.failure || rank < this.failure.rank) this.failure = { rank, error };
  }

  /** Stops: openings not begun are skipped, blocks not delivered are dropped. */
  abort(): void {
    this.aborted = true;
  }

  /** Resolves once an opening or a delivery settles (or at once when none is pending). */
  changed(): Promise<void> {
    if (this.pending.size === 0 && this.backlog === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** Waits for every opening and delivery; rejects with the failure first in the source's order. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
    await this.delivering;
    if (this.failure) throw this.failure.error;
  }
}
