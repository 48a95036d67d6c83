// The measured process of bench/index-snapshot-start.ts: a service's start in miniature, in the service's
// order. Like `face-check serve` (bin/face-check.js, src/start/early-start.ts) it first starts the kernel
// reading the snapshot files, then loads the program's modules, stops that read-ahead and opens the store
// (src/start/start-service.ts), restores the galleries (Galleries.restore: the snapshot, the change log's replay, the
// count check) and answers one identify by template (the gallery search with its exact re-rank from the
// store). Prints one JSON line with its marks (ms since its own start): `main` (this file running: node
// itself is up), `modulesMs` (the program's modules loaded), then each step's time.
// SNAPSHOT_BENCH_EARLY=0: the snapshots read ahead early but imported only once the store is open (the start
// before early imports); SNAPSHOT_BENCH_READ_AHEAD=0 as well: nothing early (for the comparisons).
//   node dist/bench/index-snapshot-child.js <store dir> <model id> <probe> snapshot|rebuild
import path from 'node:path';

import { beginSnapshotStart, type EarlySnapshotImports } from '../src/matching/snapshot/early-import';
import { startSnapshotReadAhead, stopSnapshotReadAhead } from '../src/matching/snapshot/read-ahead';
import { DEFAULT_KEY_FILE } from '../src/storage/crypto/key-file';

const ACCOUNT = 'default';

/** Deterministic unit template of person `i` (xorshift, then normalised): the bench writes these, the child rebuilds a query from one. */
export function benchTemplate(i: number, dim: number): Float32Array {
  const t = new Float32Array(dim);
  let x = (Math.imul(i + 1, 2654435761) >>> 0) || 1;
  let norm = 0;
  for (let k = 0; k < dim; k++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    t[k] = x / 4294967296 - 0.5;
    norm += t[k] * t[k];
  }
  const inv = 1 / Math.sqrt(norm);
  for (let k = 0; k < dim; k++) t[k] *= inv;
  return t;
}

async function child(storeDir: string, modelId: string, probe: number, from: string): Promise<void> {
  const marks: Record<string, number> = { main: performance.now() };
  let early: EarlySnapshotImports | undefined;
  if (from !== 'rebuild' && process.env.SNAPSHOT_BENCH_EARLY !== '0') early = beginSnapshotStart(storeDir, path.resolve(storeDir, DEFAULT_KEY_FILE), modelId);
  else if (from !== 'rebuild' && process.env.SNAPSHOT_BENCH_READ_AHEAD !== '0') startSnapshotReadAhead(storeDir);
  const [{ openStore }, { Galleries }, { snapshotPlaceOf }, { templateSize }] = await Promise.all([
    import('../src/storage/lmdb/store'), import('../src/matching/galleries'), import('../src/matching/snapshot/place'), import('../src/engine/template-spec'),
  ]);
  marks.modulesMs = performance.now() - marks.main;
  const t0 = performance.now();
  stopSnapshotReadAhead();
  const store = await openStore(storeDir);
  marks.storeOpenMs = performance.now() - t0;
  const galleries = Galleries.forStore(store.persons);
  const workers = process.env.SNAPSHOT_BENCH_WORKERS;
  const report = await galleries.restore(store.persons, modelId, from === 'rebuild' ? undefined : snapshotPlaceOf(store), { early, ...(workers === undefined ? {} : { workers: Number(workers) }) });
  marks.restoreMs = report.timings.total;
  const t = performance.now();
  // A new photo of person `probe`: its template with a little noise (cosine ~0.95).
  const query = benchTemplate(probe, templateSize());
  const noise = benchTemplate(probe + 7_000_000, query.length);
  for (let k = 0; k < query.length; k++) query[k] += 0.33 * noise[k];
  const hits = await galleries.of(ACCOUNT).search(query, 1, 0.5);
  marks.firstSearchMs = performance.now() - t;
  const cpu = process.cpuUsage();  // every thread of the process: the cost, whatever else the machine runs
  marks.cpuMs = (cpu.user + cpu.system) / 1000;
  marks.rssMB = process.memoryUsage().rss / 1e6;
  process.stdout.write(`${JSON.stringify({
    hit: hits[0]?.personId, timeOrigin: performance.timeOrigin, answeredAt: performance.timeOrigin + performance.now(), marks,
    restore: { ...report.timings, bytes: report.bytes, workers: report.workers, unsealer: report.unsealer, accounts: report.accounts.map((a) => ({ source: a.source, reason: a.reason, size: a.size, early: a.early ?? false })) },
  })}\n`);
}

if (require.main === module) {
  child(process.argv[2], process.argv[3], Number(process.argv[4]), process.argv[5]).catch((err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
