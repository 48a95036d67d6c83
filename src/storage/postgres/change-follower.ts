// Follows the person change log (./change-log.ts) on a connection of its own and hands ordered batches to a
// callback: how a node keeps its in-memory gallery in step with persons written by the other nodes.
//
// Protocol: the follower keeps `position`, the last seq it delivered. It LISTENs on the change channel and,
// on every notification, every poll tick (a safety net for a lost notification) and after every
// (re)connect, reads `seq > position` in order and delivers it. Sequence numbers become visible in commit
// order, so nothing committed can appear behind `position`. LISTEN is issued before the catch-up read, so a
// change committed in between is seen by the read or notified after it. A lost connection (terminated
// backend, server restart, network) is replaced with backoff and followed by a catch-up, so nothing is
// missed; a callback that throws gets the same batch again later (delivery is at least once: the callback
// must be idempotent, e.g. "upsert what the persons table holds now"). When the log was pruned past the
// position (a node away for longer than the retention) onResync is called to rebuild from the table.
// An observer (./meter-caches.ts) is told when the connection listens or is lost, of the accounts' writes
// (ACCOUNT_CHANNEL, on the same connection) and of every batch delivered.
import type { Client, Notification } from 'pg';
import { ACCOUNT_CHANNEL } from './accounts';
import { CHANGE_CHANNEL, readForFollower } from './change-log';
import type { ChangeFeed, ChangeFeedOptions, FollowedChange, FollowerStats, FollowerStatus, OwnChanges } from '../interfaces';
import { DatabaseUnavailableError, unavailability } from '../errors';
import { pg } from './pg-module';
import { clientOptions, type PostgresSettings } from './pool';

/** Told what the follower learns besides the changes it hands to onChanges. */
export interface FollowerObserver {
  /** Listening on both channels (true: nothing missed from now on), or the connection lost or stopped. */
  listening(on: boolean): void;
  /** The follower had missed changes and onResync rebuilt from the table. */
  resynced(on: boolean): void;
  /** An account was written ('*': every account). */
  accountChanged(accountId: string): void;
  /** onChanges applied this batch. */
  delivered(batch: readonly FollowedChange[]): void;
}

export interface ChangeFollowerOptions extends ChangeFeedOptions {
  settings: PostgresSettings;
  observer?: FollowerObserver;
}

interface Waiter {
  seq: number;
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class ChangeFollower implements ChangeFeed {
  readonly stats: FollowerStats = { reconnects: 0, notifications: 0, batches: 0, delivered: 0, resyncs: 0, offered: 0 };
  private positionSeq: number;
  private lastSeenSeq: number;
  /** performance.now() when the follower first knew of a change it had not delivered; undefined: caught up. */
  private behindSince: number | undefined;
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private connectedOnce = false;
  private dirty = false;
  private pumping: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly waiters = new Set<Waiter>();
  /** Changes this node's writers committed, in the order offered, to be delivered by the pump. */
  private offers: OwnChanges[] = [];
  /**
   * True when what was delivered is the tables' state at `position` exactly: after a read that returned every
   * change it could see (all commits up to its snapshot), and after an offer delivered on such a state. Not at
   * the start, after a resync (a rebuild reads the tables as they are by then, maybe past its position) or after
   * a read cut at batchSize (its persons as they were when read, maybe past its last seq): an offer applied
   * there could put back a state older than one already applied.
   */
  private exact = false;
  private readonly pollIntervalMs: number;
  private readonly batchSize: number;
  private readonly minDelay: number;
  private readonly maxDelay: number;

  constructor(private readonly options: ChangeFollowerOptions) {
    this.positionSeq = options.after;
    this.lastSeenSeq = options.after;
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.batchSize = options.batchSize ?? 500;
    this.minDelay = options.reconnectDelayMs ?? 100;
    this.maxDelay = options.maxReconnectDelayMs ?? 5_000;
  }

  /** The last seq delivered. */
  get position(): number {
    return this.positionSeq;
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  status(): FollowerStatus {
    const lagSeconds = this.behindSince === undefined ? 0 : (performance.now() - this.behindSince) / 1000;
    return { position: this.positionSeq, lastSeen: this.lastSeenSeq, lagSeconds, connected: this.connected, stats: { ...this.stats } };
  }

  /** Connects, LISTENs and catches up; resolves once caught up (retrying while the database is unreachable). */
  async start(): Promise<void> {
    this.pollTimer = setInterval(() => this.kick(), this.pollIntervalMs);
    this.pollTimer.unref();
    await this.ensureConnected();
    await this.drain();
  }

  /** Resolves when every change up to `seq` has been delivered; DatabaseUnavailableError after `timeoutMs`. */
  waitFor(seq: number, timeoutMs: number): Promise<void> {
    if (this.positionSeq >= seq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        seq, resolve, reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new DatabaseUnavailableError('timeout', `change follower at ${this.positionSeq}, not at ${seq} after ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
      this.kick();
    });
  }

  /**
   * A writer on this node offers the changes it committed (OwnChanges): when the follower stands exactly at
   * the log's last seq before them (and its galleries hold the tables' state there, `exact`), it delivers them
   * as they are, as its next read would have returned them, so a write waits for no notification and read.
   * Otherwise they are dropped and the log brings them.
   * Delivered by the pump, in turn with its reads: never beside a batch, never after a later one.
   */
  offer(own: OwnChanges): void {
    if (this.stopped || !this.client || own.changes.length === 0 || own.changes[own.changes.length - 1].seq <= this.positionSeq) return;
    this.offers.push(own);
    this.seen(own.changes[own.changes.length - 1].seq);
    this.pumping ??= this.pump().finally(() => { this.pumping = undefined; });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new Error('change follower stopped'));
    }
    this.waiters.clear();
    await this.pumping?.catch(() => undefined);
    const c = this.client;
    this.client = undefined;
    this.options.observer?.listening(false);
    await c?.end().catch(() => undefined);
  }

  private kick(): void {
    if (this.stopped) return;
    this.dirty = true;
    if (!this.client) {
      void this.ensureConnected();
      return;
    }
    this.pumping ??= this.pump().finally(() => { this.pumping = undefined; });
  }

  /** Waits until a pump started now has finished (start(): caught up before resolving). */
  private async drain(): Promise<void> {
    this.kick();
    while (this.pumping) await this.pumping;
  }

  private ensureConnected(): Promise<void> {
    this.connecting ??= this.connectLoop().finally(() => { this.connecting = undefined; });
    return this.connecting;
  }

  private async connectLoop(): Promise<void> {
    let delay = this.minDelay;
    while (!this.stopped && !this.client) {
      const c = new (pg().Client)(clientOptions(this.options.settings, `${this.options.settings.applicationName} change follower`));
      c.on('error', (err) => this.lost(c, err));
      c.on('end', () => this.lost(c, new Error('change follower connection ended')));
      c.on('notification', (n: Notification) => this.notified(n));
      try {
        await c.connect();
        // Before the catch-up read: a change committed meanwhile is either read or notified.
        await c.query(`LISTEN ${CHANGE_CHANNEL}`);
        if (this.options.observer) await c.query(`LISTEN ${ACCOUNT_CHANNEL}`);
        if (this.stopped) {
          await c.end().catch(() => undefined);
          return;
        }
        this.client = c;
        this.options.observer?.listening(true);
        if (this.connectedOnce) this.stats.reconnects++;
        this.connectedOnce = true;
        this.kick();
      } catch (err) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
        this.options.onError?.(err);
        await sleep(delay);
        delay = Math.min(delay * 2, this.maxDelay);
      }
    }
  }

  private lost(c: Client, err: unknown): void {
    if (c !== this.client) return;
    this.client = undefined;
    this.offers = [];
    this.options.observer?.listening(false);
    c.end().catch(() => undefined);
    if (this.stopped) return;
    this.options.onError?.(err);
    void this.ensureConnected();
  }

  private notified(n: Notification): void {
    if (n.channel === ACCOUNT_CHANNEL) {
      this.options.observer?.accountChanged(n.payload ?? '*');
      return;
    }
    if (n.channel !== CHANGE_CHANNEL) return;
    this.stats.notifications++;
    // Payload: the highest seq of the committing transaction; nothing to read when delivered already.
    const seq = Number(n.payload);
    this.seen(seq);
    if (seq > this.positionSeq) this.kick();
  }

  private async pump(): Promise<void> {
    while ((this.dirty || this.offers.length > 0) && this.client && !this.stopped) {
      const own = this.offers.shift();
      if (own) {
        await this.deliverOwn(own);
        continue;
      }
      this.dirty = false;
      const c = this.client;
      try {
        // The horizon, the log's end and the next batch in one round trip: a wake-up costs one read.
        const read = await readForFollower(c, this.positionSeq, this.batchSize, this.options.withTemplates ?? false);
        this.seen(read.lastSeq);
        if (read.horizon > this.positionSeq) {
          this.stats.resyncs++;
          this.exact = false;
          this.advance(Math.max(await this.options.onResync(), read.horizon));
          this.options.observer?.resynced(this.client === c);
          this.dirty = true;
          continue;
        }
        const batch = read.changes;
        if (batch.length === 0) {
          this.exact = true;
          continue;
        }
        this.exact = false;
        await this.options.onChanges(batch);
        this.options.observer?.delivered(batch);
        this.stats.batches++;
        this.stats.delivered += batch.length;
        this.advance(batch[batch.length - 1].seq);
        if (batch.length === this.batchSize) this.dirty = true;
        else this.exact = true;
      } catch (err) {
        if (unavailability(err)) {
          this.lost(c, err);  // reconnects, then catches up from the same position
        } else {
          // The callback failed: the same batch again after a pause.
          this.options.onError?.(err);
          await sleep(this.minDelay);
          this.dirty = true;
        }
      }
    }
  }

  /** An offered batch, if it is exactly the next one; a batch that fails to apply is left to the log. */
  private async deliverOwn(own: OwnChanges): Promise<void> {
    if (!this.exact || own.after !== this.positionSeq) return;
    try {
      await this.options.onChanges(own.changes);
    } catch (err) {
      this.options.onError?.(err);
      this.dirty = true;
      return;
    }
    this.options.observer?.delivered(own.changes);
    this.stats.batches++;
    this.stats.delivered += own.changes.length;
    this.stats.offered += own.changes.length;
    this.advance(own.changes[own.changes.length - 1].seq);
  }

  private seen(seq: number): void {
    if (!Number.isFinite(seq) || seq <= this.lastSeenSeq) return;
    this.lastSeenSeq = seq;
    if (seq > this.positionSeq) this.behindSince ??= performance.now();
  }

  private advance(seq: number): void {
    if (seq <= this.positionSeq) return;
    this.positionSeq = seq;
    this.lastSeenSeq = Math.max(this.lastSeenSeq, seq);
    // Still behind: the lag counts from this delivery (a follower that keeps delivering is not stalled).
    this.behindSince = seq >= this.lastSeenSeq ? undefined : performance.now();
    for (const w of this.waiters) {
      if (w.seq > seq) continue;
      clearTimeout(w.timer);
      this.waiters.delete(w);
      w.resolve();
    }
  }
}
