// Runs a CPU-heavy, self-contained function (e.g. bmp.ts's pixel loop) in worker threads, so a large image
// never stalls the event loop that serves every other request. The worker is started from the function's
// source text (eval), not from a file: the same code then runs from the TypeScript sources (tests) and
// from dist/, and the function must not use imports or module-level names.
// Workers are created on first use, one pool per function name, at most POOL_SIZE each; they are unref'd
// while idle so they never keep the process alive.
import os from 'node:os';
import { Worker } from 'node:worker_threads';

const POOL_SIZE = Math.max(1, Math.min(2, os.availableParallelism() - 1));
/** Niceness of decode threads: under full load they get about a tenth of a core (CFS weights 110 : 1024), never starve. */
const DECODE_NICENESS = 10;

interface Task {
  args: unknown[];
  resolve(value: Uint8Array): void;
  reject(err: Error): void;
}

interface PoolWorker {
  worker: Worker;
  task?: Task;
}

class FunctionPool {
  private readonly workers: PoolWorker[] = [];
  private readonly queue: Task[] = [];

  constructor(private readonly source: string) {}

  run(args: unknown[]): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ args, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let w = this.workers.find((x) => !x.task);
      if (!w && this.workers.length < POOL_SIZE) w = this.spawn();
      if (!w) return;
      const task = this.queue.shift()!;
      w.task = task;
      w.worker.ref();
      w.worker.postMessage(task.args);
    }
  }

  private spawn(): PoolWorker {
    // The worker thread lowers its own CPU priority (Linux applies setpriority to the calling thread only):
    // a client sending huge images then waits for idle CPU instead of slowing every other request's analysis.
    const code = `
      const { parentPort } = require('node:worker_threads');
      try { require('node:os').setPriority(${DECODE_NICENESS}); } catch {}
      const fn = (${this.source});
      parentPort.on('message', (args) => {
        try {
          const out = fn(...args);
          parentPort.postMessage({ out }, [out.buffer]);
        } catch (err) {
          parentPort.postMessage({ error: String((err && err.message) || err) });
        }
      });`;
    const entry: PoolWorker = { worker: new Worker(code, { eval: true }) };
    const finish = (fn: (t: Task) => void) => {
      const task = entry.task;
      entry.task = undefined;
      entry.worker.unref();
      if (task) fn(task);
      this.dispatch();
    };
    entry.worker.on('message', (m: { out?: Uint8Array; error?: string }) => {
      finish((t) => (m.error !== undefined ? t.reject(new Error(m.error)) : t.resolve(m.out!)));
    });
    const drop = (err: Error) => {
      const i = this.workers.indexOf(entry);
      if (i >= 0) this.workers.splice(i, 1);
      finish((t) => t.reject(err));
    };
    entry.worker.on('error', drop);
    entry.worker.on('exit', (code) => drop(new Error(`decode worker exited (${code})`)));
    entry.worker.unref();
    this.workers.push(entry);
    return entry;
  }
}

const pools = new Map<string, FunctionPool>();

/** fn(...args) in a worker; fn returns a Uint8Array (transferred back, not copied). */
export function runInWorker<A extends unknown[]>(name: string, fn: (...args: A) => Uint8Array, args: A): Promise<Uint8Array> {
  let pool = pools.get(name);
  if (!pool) pools.set(name, (pool = new FunctionPool(fn.toString())));
  return pool.run(args);
}
