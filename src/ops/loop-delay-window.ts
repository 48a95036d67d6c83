// The longest event-loop delay of the last moments, for load shedding.
//
// Not perf_hooks' monitorEventLoopDelay: its reset() forgets the time of its previous tick, so when a
// sampling timer resets it in the same loop turn that ends a stall, before the histogram's own timer has
// run, the stall is never recorded. Here one timer measures how late it fires against its own previous
// firing, and the windows rotate on those ticks, so a stall always lands in a window.
import { performance } from 'node:perf_hooks';

export type LoopDelayWindowOptions = {
  /** How often the loop is probed; a probe's lateness past this is the delay. */
  resolutionMs: number;
  /** A delay is remembered for one to two windows. */
  windowMs: number;
  /** A monotonic clock in milliseconds (tests drive their own). */
  now?: () => number;
};

export class LoopDelayWindow {
  private readonly resolutionMs: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  private lastTick: number;
  private windowStart: number;
  private current = 0;
  private previous = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(opts: LoopDelayWindowOptions) {
    this.resolutionMs = opts.resolutionMs;
    this.windowMs = opts.windowMs;
    this.now = opts.now ?? (() => performance.now());
    this.lastTick = this.windowStart = this.now();
  }

  /** Probes the loop every resolutionMs until stop(); the timer does not keep the process alive. */
  start(): this {
    this.stop();
    this.forget();
    this.timer = setInterval(() => this.tick(), this.resolutionMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One probe: how late it came is a delay of the window it ends in. */
  tick(): void {
    const now = this.now();
    const late = Math.max(0, now - this.lastTick - this.resolutionMs);
    this.lastTick = now;
    const elapsed = now - this.windowStart;
    if (elapsed >= this.windowMs) {
      // A window with no probe at all (a stall longer than it) held nothing worth remembering apart from
      // the stall itself, which is recorded below.
      this.previous = elapsed >= 2 * this.windowMs ? 0 : this.current;
      this.current = 0;
      this.windowStart = now;
    }
    if (late > this.current) this.current = late;
  }

  /** The longest delay of the current and the previous window, or the stall under way if longer. */
  longestMs(): number {
    const ongoing = this.now() - this.lastTick - this.resolutionMs;
    return Math.max(this.current, this.previous, ongoing, 0);
  }

  /** Drops what was recorded (start-up is not overload). */
  forget(): void {
    this.lastTick = this.windowStart = this.now();
    this.current = this.previous = 0;
  }
}
