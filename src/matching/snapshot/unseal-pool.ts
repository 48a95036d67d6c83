// Worker threads that read and open groups of snapshot chunks, so a large snapshot is unsealed on every core
// while the main thread hands finished groups to the index. AES-GCM on one thread runs at ~2 GB/s here
// (deciphered in 256 KiB pieces), about 0.35 s for the 704 MB of 1M persons; reading on the workers also
// keeps several disk reads in flight. A worker takes ~40 ms to boot: it says when it is ready, and the
// reader (./read.ts) opens groups on the main thread until one is.
import type crypto from 'node:crypto';
import { Worker } from 'node:worker_threads';

import { retireWorker } from '../../threads/retire';
import { buffersOf, groupError, WORKER_SOURCE, type GroupJob, type OpenedGroup } from './unseal';

/** An opened group and the worker whose memory it uses. */
export interface PooledGroup extends OpenedGroup {
  worker: number;
}

interface Pending {
  worker: number;
  resolve: (g: PooledGroup) => void;
  reject: (err: unknown) => void;
}

export class UnsealPool {
  private readonly workers: Worker[];
  private readonly ready: boolean[];
  private readonly busy: number[];
  private readonly pending = new Map<number, Pending>();
  private readonly readyListeners: Array<(worker: number) => void> = [];
  private nextId = 0;

  /** Starts the workers at once: make the pool before it is needed. */
  constructor(readonly size: number) {
    this.ready = new Array<boolean>(size).fill(false);
    this.busy = new Array<number>(size).fill(0);
    this.workers = Array.from({ length: size }, (_, index) => {
      const w = new Worker(WORKER_SOURCE, { eval: true });
      w.on('message', (m: { ready?: boolean; id: number; group?: OpenedGroup; error?: string; message?: string }) => {
        if (m.ready) {
          this.ready[index] = true;
          for (const listener of this.readyListeners) listener(index);
          return;
        }
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        this.busy[p.worker]--;
        if (m.group) p.resolve({ ...m.group, worker: p.worker });
        else p.reject(groupError(m.error, m.message ?? ''));
      });
      w.on('error', (err) => this.failAll(err));
      return w;
    });
  }

  /** Calls `listener` with each worker that is ready now and each that becomes ready; returns the unsubscribe. */
  onReady(listener: (worker: number) => void): () => void {
    this.readyListeners.push(listener);
    this.ready.forEach((r, i) => { if (r) listener(i); });
    return () => {
      const i = this.readyListeners.indexOf(listener);
      if (i >= 0) this.readyListeners.splice(i, 1);
    };
  }

  anyReady(): boolean {
    return this.ready.some(Boolean);
  }

  /** Groups the worker is opening or has queued. */
  inFlight(worker: number): number {
    return this.busy[worker];
  }

  /** Reads and opens one group on `worker`. */
  open(worker: number, key: crypto.KeyObject, job: GroupJob): Promise<PooledGroup> {
    const id = this.nextId++;
    this.busy[worker]++;
    return new Promise<PooledGroup>((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      this.workers[worker].postMessage({ id, key, job });
    });
  }

  /** Gives a group's memory back to its worker once the index has copied it (moved, not copied). */
  recycle(g: PooledGroup): void {
    const buffers = buffersOf(g);
    this.workers[g.worker].postMessage({ recycle: buffers }, [buffers.codes, buffers.scales, buffers.sums]);
  }

  /**
   * Stops taking work. The workers retire in the background (../../threads/retire.ts: terminating a thread
   * that has just been busy can abort the process); the start does not wait for them. Resolves with their
   * exit codes once they are gone (0: each retired on its own).
   */
  close(): Promise<number[]> {
    this.readyListeners.length = 0;
    this.failAll(new Error('unseal pool closed'));
    return Promise.all(this.workers.map((w) => retireWorker(w)));
  }

  private failAll(err: unknown): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
