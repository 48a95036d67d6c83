// Runs a CPU-heavy, self-contained function (e.g. bmp.ts's pixel loop) in worker threads, so a large image
// never stalls the event loop that serves every other request. The worker is started from the function's
// source text (eval), not from a file: the same code then runs from the TypeScript sources (tests) and
// from dist/, and the function must not use imports or module-level names.
// Workers are created on first use, one pool per function name, at most POOL_SIZE each; they are unref'd
// while idle so they never keep the process alive.
import os from 'node:os';

import { WorkerPool } from '../threads/worker-pool';

const POOL_SIZE = Math.max(1, Math.min(2, os.availableParallelism() - 1));
/** Niceness of decode threads: under full load they get about a tenth of a core (CFS weights 110 : 1024), never starve. */
const DECODE_NICENESS = 10;

/**
 * The pool of one function. The worker thread lowers its own CPU priority (Linux applies setpriority to the
 * calling thread only): a client sending huge images then waits for idle CPU instead of slowing every other
 * request's analysis.
 */
function functionPool(source: string): WorkerPool {
  return new WorkerPool({
    size: POOL_SIZE, lazy: true, unrefIdle: true, source: `
      try { require('node:os').setPriority(${DECODE_NICENESS}); } catch {}
      const fn = (${source});
      function handle(args) {
        const out = fn(...args);
        return [out, [out.buffer]];
      }`,
  });
}

const pools = new Map<string, WorkerPool>();

/** fn(...args) in a worker; fn returns a Uint8Array (transferred back, not copied). */
export function runInWorker<A extends unknown[]>(name: string, fn: (...args: A) => Uint8Array, args: A): Promise<Uint8Array> {
  let pool = pools.get(name);
  if (!pool) pools.set(name, (pool = functionPool(fn.toString())));
  return pool.run<Uint8Array>(args);
}
