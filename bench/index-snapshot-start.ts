// The galleries' start from their sealed snapshot: process start to the first identify answered, at N
// persons, the page cache cold or warm. bench:index calls measureSnapshotStart; alone:
//   node dist/bench/index-snapshot-start.js [persons,...] [cold|warm|both]     (default 100000,1000000 both)
// The store (N persons of account "default", random unit templates of the installed model's id and template
// size, written with createMany) and its snapshot are built once and cached under
// /tmp/face-check-snapshot-bench (SNAPSHOT_BENCH_DIR). Each measurement spawns a fresh node process
// (./index-snapshot-child.ts) that loads the program's modules, opens the store, restores the galleries and
// answers one identify by template (the gallery search with its exact re-rank from the store); the time
// runs from spawn to that answer. The face engine's model loading is not part of it: the service runs it in
// parallel with the galleries' start (src/start/start-service.ts), and it does not depend on the gallery size.
// Cold: `sync`, then every file of the store and of the snapshot folder dropped from the page cache with
// `dd if=FILE iflag=nocache count=0` (posix_fadvise DONTNEED on the whole file), as bench:board does. Warm:
// the same start ran just before (unmeasured), so the page cache holds what a start reads.
// The snapshot is unsealed natively where the process's OpenSSL is reachable (Collection.importSealed), else
// in JavaScript; SNAPSHOT_BENCH_UNSEAL=js|native picks one for the children (FACE_CHECK_SNAPSHOT_UNSEAL), =both
// runs each measurement with both, one after the other (the fairest comparison on a shared machine).
// SNAPSHOT_BENCH_EARLY=both runs each measurement with the snapshot opened after the store (the start before the
// imports begun early, src/matching/snapshot/early-import.ts) and as the service does, one after the other; =0 only the former.
// SNAPSHOT_BENCH_WORKERS sets the JavaScript path's unsealing threads (0: the main thread alone),
// SNAPSHOT_BENCH_ROUNDS the rounds of the command line (cold, warm and, unless SNAPSHOT_BENCH_REBUILD=0, the
// start without snapshots that rebuilds from the store, interleaved). Each line splits the time to the answer:
//   process (spawn to the child's main: node itself) + modules + store open + restore (headers; natively: read /
//   open / keys busy times summed over the threads, within the import's wall time; in JavaScript: read /
//   unseal / import busy times) + first search; the child's CPU time (all threads) and resident memory.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { templateModelId, templateSize } from '../src/engine/template-spec';
import { Galleries } from '../src/matching/galleries';
import { SNAPSHOT_FOLDER, snapshotFileName, snapshotPlaceOf } from '../src/matching/snapshot/place';
import { closeSnapshot, openSnapshot } from '../src/matching/snapshot/read';
import type { Unsealer } from '../src/matching/snapshot/restore';
import { SnapshotScheduler } from '../src/matching/snapshot/scheduler';
import { benchTemplate } from './index-snapshot-child';
import { openStore, SCHEMA_VERSION } from '../src/storage/lmdb/store';
import { describeHost, measureHostInChild } from './host';
import { serviceProcessEnv } from './service-env';

const ACCOUNT = 'default';
const CACHE = process.env.SNAPSHOT_BENCH_DIR ?? '/tmp/face-check-snapshot-bench';
const BATCH = 8192;

interface Cached { persons: number; modelId: string; dim: number; writeS: number; storeBytes: number; snapshotMs?: number; snapshotBytes?: number }

function folderBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    n += e.isDirectory() ? folderBytes(p) : fs.statSync(p).size;
  }
  return n;
}

/** The cached store of `persons` persons with a current snapshot (remade when its format or layout changed). */
async function benchStore(persons: number): Promise<{ dir: string; info: Cached }> {
  const modelId = templateModelId(), dim = templateSize();
  // The store's layout version is part of the name: a store written by an earlier layout is not reused.
  const tag = crypto.createHash('sha256').update(`${modelId}/${dim}/schema${SCHEMA_VERSION}-counts`).digest('hex').slice(0, 12);
  const dir = path.join(CACHE, `${persons}-${tag}`);
  const storeDir = path.join(dir, 'store');
  const marker = path.join(dir, 'complete.json');
  let info: Cached;
  if (fs.existsSync(marker)) {
    info = JSON.parse(fs.readFileSync(marker, 'utf8')) as Cached;
  } else {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const t0 = performance.now();
    const store = await openStore(storeDir);
    const image = Buffer.alloc(64, 1);  // a stand-in reference image: the start never reads images
    const now = new Date().toISOString();
    for (let start = 0; start < persons; start += BATCH) {
      const items = [];
      for (let i = start; i < Math.min(persons, start + BATCH); i++) items.push({ personId: `person-${i}`, modelId, template: benchTemplate(i, dim), referenceImage: image });
      await store.persons.createMany(ACCOUNT, items, now);
    }
    await store.close();
    execFileSync('sync');
    info = { persons, modelId, dim, writeS: (performance.now() - t0) / 1000, storeBytes: folderBytes(storeDir) };
    fs.writeFileSync(marker, JSON.stringify(info));
  }
  const store = await openStore(storeDir);
  try {
    const galleries = Galleries.forStore(store.persons);
    const place = snapshotPlaceOf(store);
    let current = false;
    try {
      const s = openSnapshot(path.join(place.dir, snapshotFileName(ACCOUNT)));
      if (s) {
        current = s.header.count === persons && s.header.layout === await galleries.codeLayout() && s.header.modelId === modelId && s.header.keyWrap !== undefined;
        closeSnapshot(s);
      }
    } catch {
      current = false;
    }
    if (!current || info.snapshotBytes === undefined) {
      // The snapshot a running service would write: the gallery rebuilt, then written by the scheduler.
      await galleries.restore(store.persons, modelId, undefined);
      const scheduler = new SnapshotScheduler({
        galleries, persons: store.persons, exclusive: store.exclusive, modelId, place, log: { info: () => undefined, warn: () => undefined },
        settings: { intervalS: 3600, minChanges: 1, stopTimeoutS: 3600, changeLogKeep: 1_000_000_000 },
      });
      const written = await scheduler.writeNow(ACCOUNT);
      if (!written) throw new Error('the snapshot was not written');
      info = { ...info, snapshotMs: written.exportMs + written.writeMs, snapshotBytes: written.bytes };
      fs.writeFileSync(marker, JSON.stringify(info));
    }
    galleries.close();
  } finally {
    await store.close();
  }
  execFileSync('sync');
  return { dir, info };
}

function dropFromPageCache(dir: string): void {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) dropFromPageCache(p);
    else execFileSync('dd', [`if=${p}`, 'iflag=nocache', 'count=0', 'status=none']);
  }
}

/**
 * The disk's own floor for a cold start, measured just before it: the snapshot files dropped from the page
 * cache, then read once in 8 MiB reads into one buffer (no decryption, no import). The shared host's disk
 * varies from run to run (the same file read cold in 0.38 to 1.14 s here), so each cold start is shown beside it.
 */
function coldReadMs(storeDir: string): number {
  const folder = path.join(storeDir, SNAPSHOT_FOLDER);
  const files = fs.readdirSync(folder).filter((n) => n.endsWith('.snap')).map((n) => path.join(folder, n));
  for (const file of files) execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  const buffer = Buffer.allocUnsafe(8 << 20);
  const t0 = performance.now();
  for (const file of files) {
    const fd = fs.openSync(file, 'r');
    try {
      while (fs.readSync(fd, buffer, 0, buffer.length, null) > 0);
    } finally {
      fs.closeSync(fd);
    }
  }
  return performance.now() - t0;
}

/** Spawns the child; resolves with its answer line and when it came. */
async function runChild(storeDir: string, modelId: string, probe: number, from: 'snapshot' | 'rebuild' = 'snapshot', unseal?: Unsealer,
  early?: boolean): Promise<{ answer: { line: string; at: number }; spawnedAt: number }> {
  const env: NodeJS.ProcessEnv = { ...serviceProcessEnv(), ...(unseal ? { FACE_CHECK_SNAPSHOT_UNSEAL: unseal } : {}), ...(early === false ? { SNAPSHOT_BENCH_EARLY: '0' } : {}) };
  const spawnedAt = performance.timeOrigin + performance.now();
  const child = spawn(process.execPath, [path.join(__dirname, 'index-snapshot-child.js'), storeDir, modelId, String(probe), from], { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  const answer = await new Promise<{ line: string; at: number }>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ line: out.slice(0, nl), at: performance.timeOrigin + performance.now() });
    });
    child.on('exit', (code) => reject(new Error(`the child exited with ${code} before answering: ${out}`)));
  });
  child.kill('SIGKILL');
  return { answer, spawnedAt };
}

/** One fresh process: open, restore, identify; ms from spawn to the answer and the child's split. */
export async function measureSnapshotStart(opts: { persons: number; cold: boolean; from?: 'snapshot' | 'rebuild'; unseal?: Unsealer; early?: boolean }): Promise<{ readyMs: number; details: Record<string, unknown> }> {
  const { dir, info } = await benchStore(opts.persons);
  const storeDir = path.join(dir, 'store');
  execFileSync('sync');
  const probe = Math.floor(opts.persons / 2);
  const from = opts.from ?? 'snapshot';
  // Warm: the same start just ran, so the page cache holds what a start reads (the snapshot, LMDB's pages).
  const diskReadMs = opts.cold && from === 'snapshot' ? coldReadMs(storeDir) : undefined;
  if (opts.cold) dropFromPageCache(storeDir);
  else await runChild(storeDir, info.modelId, probe, from, opts.unseal, opts.early);
  const { answer, spawnedAt } = await runChild(storeDir, info.modelId, probe, from, opts.unseal, opts.early);
  const r = JSON.parse(answer.line) as { hit: string; timeOrigin: number; answeredAt: number; marks: Record<string, number>; restore: Record<string, unknown> };
  if (r.hit !== `person-${probe}`) throw new Error(`identify answered ${r.hit}, expected person-${probe}`);
  const readyMs = answer.at - spawnedAt;
  return {
    readyMs,
    details: {
      persons: opts.persons, cold: opts.cold, ...(diskReadMs === undefined ? {} : { diskReadMs }),
      processStartMs: r.timeOrigin - spawnedAt + r.marks.main,
      childAnsweredMs: r.answeredAt - spawnedAt,
      ...r.marks, restore: r.restore,
      snapshotBytes: info.snapshotBytes, snapshotWriteMs: info.snapshotMs, storeBytes: info.storeBytes, storeWriteS: info.writeS,
    },
  };
}

async function main(): Promise<void> {
  const sizes = (process.argv[2] ?? '100000,1000000').split(',').map(Number);
  const modes = process.argv[3] === 'cold' ? [true] : process.argv[3] === 'warm' ? [false] : [false, true];
  const rounds = Number(process.env.SNAPSHOT_BENCH_ROUNDS ?? 3);
  const which = process.env.SNAPSHOT_BENCH_UNSEAL;
  const unsealers: Array<Unsealer | undefined> = which === 'both' ? ['js', 'native'] : which === 'js' || which === 'native' ? [which] : [undefined];
  const earlyEnv = process.env.SNAPSHOT_BENCH_EARLY;
  const earlies: Array<boolean | undefined> = earlyEnv === 'both' ? [false, true] : earlyEnv === '0' ? [false] : [undefined];
  console.log(describeHost(measureHostInChild()));
  for (const persons of sizes) {
    const { info } = await benchStore(persons);
    console.log(`${persons} persons: store ${(info.storeBytes / 1e6).toFixed(0)} MB written in ${info.writeS.toFixed(1)} s; snapshot ${(info.snapshotBytes! / 1e6).toFixed(1)} MB written in ${info.snapshotMs!.toFixed(0)} ms`);
    for (let round = 0; round < rounds; round++) {
      const runs: Array<{ cold: boolean; from: 'snapshot' | 'rebuild'; unseal?: Unsealer; early?: boolean }> =
        modes.flatMap((cold) => unsealers.flatMap((unseal) => earlies.map((early) => ({ cold, from: 'snapshot' as const, unseal, early }))));
      if (process.env.SNAPSHOT_BENCH_REBUILD !== '0') runs.push({ cold: false, from: 'rebuild' });
      for (const { cold, from, unseal, early } of runs) {
        const { readyMs, details } = await measureSnapshotStart({ persons, cold, from, unseal, early });
        const r = details.restore as Record<string, number> & { unsealer: Unsealer; accounts: Array<{ early: boolean }> };
        const opened = from === 'rebuild' ? '' : r.accounts.some((a) => a.early) ? ', opened early' : ', opened after the store';
        const f = (v: unknown) => Number(v).toFixed(0);
        const unsealing = r.unsealer === 'native'
          ? `native: read ${f(r.read)} / open ${f(r.unseal)} / keys ${f(r.keys)} busy on ${r.workers} threads in import ${f(r.import)}`
          : `js: read ${f(r.read)} / unseal ${f(r.unseal)} / import ${f(r.import)} busy on ${r.workers} workers`;
        console.log(`  ${from === 'rebuild' ? 'rebuild (no snapshot), warm' : cold ? 'cold' : 'warm'}${opened} ready ${f(readyMs)} ms = process ${f(details.processStartMs)} + modules ${f(details.modulesMs)} + store open ${f(details.storeOpenMs)} + restore ${f(details.restoreMs)} ` +
          `(headers ${f(r.headers)}, ${unsealing}, replay ${f(r.replay)}, check ${f(r.check)}, rebuild ${f(r.rebuild)}) + first search ${f(details.firstSearchMs)}; CPU ${f(details.cpuMs)} ms, RSS ${f(details.rssMB)} MB` +
          (details.diskReadMs === undefined ? '' : `; the snapshot read cold alone just before: ${f(details.diskReadMs)} ms`));
      }
    }
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
