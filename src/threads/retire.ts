// Ending a worker thread that has been working without racing V8's background jobs. Node unregisters a worker's
// isolate from the platform before it disposes of it; a background job of that isolate still running in
// between (a TurboFan compile of the worker's hot code, which may allocate and schedule GC work) then asks the
// platform for the isolate's task runner and aborts the whole process ("NodePlatform::ForIsolate: Assertion
// failed: (data.first) != nullptr", seen on Node 20 with terminate() right after an unseal worker's busy
// loop). So such a worker is never terminated: it is told to retire, takes no more work, and exits on its own
// once it has been quiet for a while, when its compile jobs are long done. terminate() stays only as the
// fallback for a worker that does not exit in time (stuck in a loop: nothing is safe then).
import type { Worker } from 'node:worker_threads';

/** How long a retiring worker stays quiet before it exits: TurboFan's jobs take milliseconds. */
export const QUIET_MS = 250;
/** How much longer a worker gets to exit on its own before it is terminated. */
export const RETIRE_BOUND_MS = 5_000;

/**
 * The worker's side, inlined into a worker's source: `retiring(m)` is true for the retire message (and from
 * then on for every message, which the worker then ignores). The port is closed once the thread has been
 * quiet for the time asked, and the thread then ends with nothing left to run (exit code 0).
 */
export const RETIRE_SOURCE = `
let retiringSince = false;
function retiring(m) {
  if (m && m.retire !== undefined && !retiringSince) {
    retiringSince = true;
    setTimeout(() => require('node:worker_threads').parentPort.close(), m.retire);
  }
  return retiringSince;
}
`;

/**
 * Asks a worker whose source handles RETIRE_SOURCE's message to exit on its own; it no longer holds the
 * process open meanwhile. Resolves with its exit code: 0 when it retired, 1 when the fallback had to
 * terminate it, -1 when it had ended before.
 */
export function retireWorker(worker: Worker, quietMs = QUIET_MS, boundMs = RETIRE_BOUND_MS): Promise<number> {
  if (worker.threadId === -1) return Promise.resolve(-1);  // ended already (failed): nothing to wait for
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  worker.unref();
  worker.postMessage({ retire: quietMs });
  const fallback = setTimeout(() => void worker.terminate(), quietMs + boundMs);
  fallback.unref();
  void exited.then(() => clearTimeout(fallback));
  return exited;
}
