// The one harness for worker threads: every place that runs JavaScript off the main thread (the snapshot
// restore's and the start-up build's unsealing, image decoding) starts its workers here. A worker runs from
// source text (eval), not from a file, so the same code runs under the tests' TypeScript loader and from
// dist/; the source defines `handle(body, emit)` and WORKER_SIDE wraps it. The pool hands out work (to a named
// worker, or to any idle one through a queue), aborts at once (a shared stop flag: what is queued in the
// workers is skipped), retires its workers rather than terminating them (./retire.ts), and hands every
// failure to the caller waiting on it.
import { Worker, type Transferable } from 'node:worker_threads';

import { RETIRE_SOURCE, retireWorker } from './retire';

// `handle` returns undefined or [reply, transferList]; `emit(value, transferList)` sends an event of the
// worker's own. A message that expects no reply and throws fails the worker, which then ignores everything
// (a stream that broke must not go on).
const WORKER_SIDE = `
${RETIRE_SOURCE}
const { parentPort } = require('node:worker_threads');
let stopFlag;
let failed = false;
const errorOf = (err) => ({ message: String((err && err.message) || err), code: err && err.code, seal: !!(err && err.sealError) });
const emit = (event, transfer) => parentPort.postMessage({ event }, transfer || []);
parentPort.on('message', (m) => {
  if (retiring(m) || failed) return;
  if (m.stop) return void (stopFlag = m.stop);
  if (stopFlag && Atomics.load(stopFlag, 0) !== 0) return;
  try {
    const out = handle(m.body, emit);
    if (m.id !== undefined) parentPort.postMessage({ id: m.id, value: out && out[0] }, (out && out[1]) || []);
  } catch (err) {
    if (m.id !== undefined) return parentPort.postMessage({ id: m.id, error: errorOf(err) });
    failed = true;
    parentPort.postMessage({ failed: errorOf(err) });
  }
});
parentPort.postMessage({ ready: true });
`;

/** A failure as the worker reported it: its message, its `code`, whether it was a `sealError`. */
export type WorkerError = { message: string; code?: string; seal: boolean };

export interface WorkerPoolOptions {
  /** JavaScript defining `function handle(body, emit)`, without imports (require works). */
  source: string;
  size: number;
  /** Start workers as work needs them (else all at once, so they boot before the work comes). */
  lazy?: boolean;
  /** Run `handle` on the calling thread instead, synchronously (where a worker does not pay off). */
  here?: boolean;
  /** Let the process exit while no work is in flight (else the workers hold it open until close()). */
  unrefIdle?: boolean;
  /** The error a failed message rejects with (default: an Error of its message). */
  errorOf?: (err: WorkerError) => Error;
  onEvent?: (worker: number, event: unknown) => void;
}

type Handle = (body: unknown, emit: (event: unknown) => void) => [unknown, unknown?] | undefined;

type Request = { body: unknown; transfer: readonly Transferable[]; resolve: (value: unknown) => void; reject: (err: Error) => void };
/** A worker, whether it said it is ready, its requests not answered yet, and why it failed. */
type Slot = { worker: Worker; ready: boolean; busy: number; failure?: Error };

export class WorkerPool {
  private readonly slots: Array<Slot | undefined>;
  private readonly pending = new Map<number, Request & { worker: number }>();
  private readonly queue: Request[] = [];
  private readonly readyListeners: Array<(worker: number) => void> = [];
  private readonly stop = new Int32Array(new SharedArrayBuffer(4));
  private nextId = 0;
  private closing = false;
  private here?: { handle: Handle; failure?: Error };

  constructor(private readonly options: WorkerPoolOptions) {
    this.slots = new Array<Slot | undefined>(options.here ? 0 : options.size).fill(undefined);
    // Compiled for this pool: the source's state is its own, as a worker's is.
    if (options.here) this.here = { handle: new Function('require', `${options.source}\nreturn handle;`)(require) as Handle };
    else if (!options.lazy) for (let i = 0; i < options.size; i++) this.start(i);
  }

  /** Calls `listener` with each worker that is ready now and each that becomes ready; returns the unsubscribe. */
  onReady(listener: (worker: number) => void): () => void {
    this.readyListeners.push(listener);
    this.slots.forEach((s, i) => { if (s?.ready) listener(i); });
    return () => void this.readyListeners.splice(this.readyListeners.indexOf(listener) >>> 0, 1);
  }

  anyReady(): boolean {
    return this.slots.some((s) => s?.ready);
  }

  /** Requests the worker has not answered yet. */
  inFlight(worker: number): number {
    return this.slots[worker]?.busy ?? 0;
  }

  /** Why the worker failed, if it did: its requests reject with this. */
  failure(worker: number): Error | undefined {
    return this.here ? this.here.failure : this.slots[worker]?.failure;
  }

  /** Sends `body` to `worker`; resolves with its reply. */
  request<T>(worker: number, body: unknown, transfer: readonly Transferable[] = []): Promise<T> {
    if (this.here) return this.runHere(body, true) as Promise<T>;
    const slot = this.slots[worker] ?? this.start(worker);
    if (slot.failure) return Promise.reject(slot.failure);
    return new Promise<T>((resolve, reject) => this.send(worker, slot, { body, transfer, resolve: resolve as (v: unknown) => void, reject }));
  }

  /** Sends `body` to an idle worker (starting one if the pool may), or queues it until one is idle. */
  run<T>(body: unknown, transfer: readonly Transferable[] = []): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ body, transfer, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Sends a message that expects no reply; if it throws, the worker fails. */
  post(worker: number, body: unknown, transfer: readonly Transferable[] = []): void {
    if (this.here) return void this.runHere(body, false).catch(() => undefined);  // failure(0) holds it
    const slot = this.slots[worker] ?? this.start(worker);
    if (!slot.failure) slot.worker.postMessage({ body }, transfer);
  }

  /** Stops the work at once: the messages still queued in the workers are skipped. */
  abort(): void {
    Atomics.store(this.stop, 0, 1);
  }

  /**
   * Stops taking work: what waits rejects, and the workers retire in the background (./retire.ts:
   * terminating a thread that has just been busy can abort the process). Resolves with their exit codes
   * once they are gone (0: each retired on its own).
   */
  close(): Promise<number[]> {
    this.closing = true;
    this.readyListeners.length = 0;
    const closed = new Error('worker pool closed');
    for (const r of [...this.queue.splice(0), ...this.pending.values()]) r.reject(closed);
    this.pending.clear();
    return Promise.all(this.slots.map((s) => (s ? retireWorker(s.worker) : -1)));
  }

  private start(index: number): Slot {
    const worker = new Worker(`${this.options.source}\n${WORKER_SIDE}`, { eval: true });
    const slot: Slot = (this.slots[index] = { worker, ready: false, busy: 0 });
    if (this.options.unrefIdle) worker.unref();
    worker.postMessage({ stop: this.stop });
    worker.on('message', (m: { ready?: boolean; id?: number; value?: unknown; error?: WorkerError; event?: unknown; failed?: WorkerError }) => {
      if (m.ready) {
        slot.ready = true;
        for (const listener of [...this.readyListeners]) listener(index);
      } else if (m.id !== undefined) {
        const r = this.pending.get(m.id);
        if (!r) return;
        this.pending.delete(m.id);
        if (--slot.busy === 0 && this.options.unrefIdle) worker.unref();
        if (m.error) r.reject(this.errorOf(m.error));
        else r.resolve(m.value);
        this.dispatch();
      } else if (m.failed) {
        this.fail(index, slot, this.errorOf(m.failed));
      } else {
        this.options.onEvent?.(index, m.event);
      }
    });
    worker.on('error', (err) => this.fail(index, slot, err));
    worker.on('exit', (code) => { if (!this.closing) this.fail(index, slot, new Error(`worker exited (${code}) with work to do`)); });
    return slot;
  }

  private send(worker: number, slot: Slot, r: Request): void {
    const id = this.nextId++;
    if (slot.busy++ === 0 && this.options.unrefIdle) slot.worker.ref();
    this.pending.set(id, { ...r, worker });
    slot.worker.postMessage({ id, body: r.body }, r.transfer);
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closing) {
      let index = this.slots.findIndex((s) => s !== undefined && !s.failure && s.busy === 0);
      if (index < 0) index = this.slots.indexOf(undefined);
      if (index < 0) return;
      this.send(index, this.slots[index] ?? this.start(index), this.queue.shift()!);
    }
  }

  /** What waits on a failed worker rejects; a lazy pool starts another in its place when work comes. */
  private fail(index: number, slot: Slot, err: Error): void {
    if (slot.failure) return;
    slot.failure = err;
    slot.busy = 0;
    for (const [id, r] of this.pending) {
      if (r.worker !== index) continue;
      this.pending.delete(id);
      r.reject(err);
    }
    if (this.options.lazy && this.slots[index] === slot) {
      this.slots[index] = undefined;
      void retireWorker(slot.worker);
      this.dispatch();
    }
  }

  /** The worker side's rules on this thread: a request's failure rejects it, a post's fails the pool. */
  private runHere(body: unknown, reply: boolean): Promise<unknown> {
    const here = this.here!;
    if (here.failure) return Promise.reject(here.failure);
    if (Atomics.load(this.stop, 0) !== 0) return Promise.reject(new Error('worker pool aborted'));
    try {
      return Promise.resolve(here.handle(body, (event) => this.options.onEvent?.(0, event))?.[0]);
    } catch (err) {
      const e = err as { message?: string; code?: string; sealError?: boolean };
      const error = this.errorOf({ message: String(e?.message ?? err), code: e?.code, seal: !!e?.sealError });
      if (!reply) here.failure = error;
      return Promise.reject(error);
    }
  }

  private errorOf(err: WorkerError): Error {
    return this.options.errorOf?.(err) ?? new Error(err.message);
  }
}
