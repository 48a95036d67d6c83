// Worker threads that have been busy are never terminated (src/threads/retire.ts): terminating one while V8
// still compiles its hot code on a background thread can abort the whole process. A retired worker exits on
// its own (exit code 0, where terminate gives 1) once quiet, without holding the process open; one that does
// not answer is terminated after the bound. The snapshot restore's pool retires its workers too.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { unsealPool } from '../../src/matching/snapshot/unseal';
import { RETIRE_SOURCE, retireWorker } from '../../src/threads/retire';

const HOT_WORKER = `
const { parentPort } = require('node:worker_threads');
${RETIRE_SOURCE}
// Hot code for TurboFan to compile on its background threads while the worker works.
function mix(a, i) { return ((a * 31) ^ (i + (a >>> 3))) | 0; }
parentPort.on('message', (m) => {
  if (retiring(m)) return;
  let a = 1;
  const until = Date.now() + m.busyMs;
  for (let i = 0; Date.now() < until; i++) a = mix(a, i);
  parentPort.postMessage({ a });
});
`;

// A retiring worker no longer holds the process open, so the tests that wait for one hold it themselves.
const keepAlive = setInterval(() => undefined, 1000);
t.teardown(() => clearInterval(keepAlive));

const once = <T>(w: Worker, event: string) => new Promise<T>((resolve) => w.once(event, resolve));

t.test('a worker retired right after busy work exits on its own, not terminated', async (t) => {
  for (let round = 0; round < 5; round++) {
    const w = new Worker(HOT_WORKER, { eval: true });
    w.postMessage({ busyMs: 150 });
    await once(w, 'message');
    const t0 = Date.now();
    const code = await retireWorker(w, 50);
    t.equal(code, 0, `round ${round}: exit code 0 (terminate gives 1)`);
    t.ok(Date.now() - t0 >= 45, `round ${round}: it stayed quiet first`);
  }
});

t.test('a worker retired in the middle of its work finishes that message, then retires', async (t) => {
  const w = new Worker(HOT_WORKER, { eval: true });
  let answers = 0;
  w.on('message', () => answers++);
  w.postMessage({ busyMs: 300 });
  w.postMessage({ busyMs: 10 });
  await new Promise((r) => setTimeout(r, 50));
  t.equal(await retireWorker(w, 20), 0, 'exit code 0');
  t.equal(answers, 2, 'the messages queued before the retire were answered');
});

t.test('a worker that does not retire is terminated after the bound', async (t) => {
  const w = new Worker(`require('node:worker_threads').parentPort.on('message', () => { for (;;); });`, { eval: true });
  w.postMessage({ spin: true });
  t.equal(await retireWorker(w, 10, 200), 1, 'terminated: exit code 1');
  t.equal(await retireWorker(w, 10, 200), -1, 'retiring a worker that has ended resolves at once');
});

t.test('a retiring worker does not hold the process open', async (t) => {
  const retire = path.join(__dirname, '..', '..', 'src', 'threads', 'retire.ts');
  const script = `
    const { Worker } = require('node:worker_threads');
    const { RETIRE_SOURCE, retireWorker } = require(${JSON.stringify(retire)});
    const w = new Worker(RETIRE_SOURCE + "require('node:worker_threads').parentPort.on('message', (m) => retiring(m));", { eval: true });
    w.once('online', () => { retireWorker(w, 120000, 120000); console.log('retiring'); });`;
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [...process.execArgv, '-e', script], { encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /retiring/);
  t.ok(Date.now() - t0 < 60_000, 'the process ended without waiting for the worker\'s two quiet minutes');
});

t.test('the snapshot restore\'s unseal pool retires its workers', async (t) => {
  const pool = unsealPool(2);
  await new Promise<void>((resolve) => {
    let ready = 0;
    pool.onReady(() => { if (++ready === 2) resolve(); });
  });
  t.same(await pool.close(), [0, 0], 'both exit on their own');
});
