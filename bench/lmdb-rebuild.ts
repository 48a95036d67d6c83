// Child process of bench:index (bench/index.ts): one start-up gallery rebuild from LMDB in a fresh process,
// as at a service start. Prints one JSON line {seconds, loaded}.
//   node dist/bench/lmdb-rebuild.js segments <storeDir> <modelId>     the service's own path: openStore + Galleries.rebuild
//   node dist/bench/lmdb-rebuild.js plain-segments <envDir> <modelId> the same segments stored plain (before sealing)
//   node dist/bench/lmdb-rebuild.js per-person <envDir> <accountId>   the replaced layout: one raw float32 value per person
// And the cost of sealing, side by side: builds a sealed and a plain store of N persons, then times their
// rebuilds alternately, each in a fresh process (ROUNDS each), and prints every run and the medians:
//   node dist/bench/lmdb-rebuild.js seal-cost <N> [ROUNDS]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open as openLmdb } from 'lmdb';

import { similarityIndex } from '../src/similarity-index/similarity-index';
import { Galleries } from '../src/matching/galleries';
import { templateSize } from '../src/engine/template-spec';
import { openStore } from '../src/storage/lmdb/store';
import { entriesWithPrefix } from '../src/storage/lmdb/key-prefix';
import { PersonRepository } from '../src/storage/lmdb/persons';
import { plainValues } from '../src/storage/crypto/sealer';

// The engine's template size unless INDEX_BENCH_DIM says otherwise (bench:index passes it on to this child).
const DIM = Number(process.env.INDEX_BENCH_DIM ?? templateSize());
const BLOCK = 65536;

async function segments(dir: string, modelId: string): Promise<number> {
  const store = await openStore(dir);
  const galleries = new Galleries();
  const { loaded } = await galleries.rebuild(store.persons, modelId);
  return loaded;
}

/** The rebuild over segments stored plain: what a start cost before values were sealed. */
async function plainSegments(dir: string, modelId: string): Promise<number> {
  const root = openLmdb({ path: dir, compression: false });
  const { loaded } = await new Galleries().rebuild(new PersonRepository(root, plainValues), modelId);
  return loaded;
}

/** Builds a sealed and a plain store of n persons (same templates) and times their rebuilds alternately. */
async function sealCost(n: number, rounds: number): Promise<void> {
  const modelId = 'bench-model';
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-seal-bench-'));
  const sealedDir = path.join(base, 'sealed');
  const plainDir = path.join(base, 'plain');
  try {
    const now = new Date().toISOString();
    const image = Buffer.alloc(64, 1);  // the rebuild never reads images
    const sealed = await openStore(sealedDir);
    const plainRoot = openLmdb({ path: plainDir, compression: false });
    const plain = new PersonRepository(plainRoot, plainValues);
    let seed = 1;
    const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) - 0.5;
    for (let start = 0; start < n; start += 16384) {
      const items = [];
      for (let i = start; i < Math.min(n, start + 16384); i++) {
        const template = new Float32Array(DIM);
        for (let k = 0; k < DIM; k++) template[k] = random();
        items.push({ personId: `person-${i}`, modelId, template, referenceImage: image });
      }
      await sealed.persons.createMany('acct-1', items, now);
      await plain.createMany('acct-1', items, now);
    }
    await sealed.close();
    await plainRoot.close();
    execFileSync('sync');
    const child = (mode: string, dir: string): number => {
      const out = execFileSync(process.execPath, [...process.execArgv, __filename, mode, dir, modelId], { encoding: 'utf8' });
      const r = JSON.parse(out.trim().split('\n').pop()!) as { seconds: number; loaded: number };
      if (r.loaded !== n) throw new Error(`${mode} rebuild loaded ${r.loaded}, expected ${n}`);
      return r.seconds;
    };
    const runs = { plain: [] as number[], sealed: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      runs.plain.push(child('plain-segments', plainDir));
      runs.sealed.push(child('segments', sealedDir));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(JSON.stringify({
      mode: 'seal-cost', persons: n, dimension: DIM, rounds,
      plainS: runs.plain.map((s) => +s.toFixed(3)), sealedS: runs.sealed.map((s) => +s.toFixed(3)),
      plainMedianS: +median(runs.plain).toFixed(3), sealedMedianS: +median(runs.sealed).toFixed(3),
    }));
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

/** The same double-buffered 64k-template bulk loads, fed from one LMDB value per person. */
async function perPerson(dir: string, account: string): Promise<number> {
  const c = similarityIndex().createCollection('bench-per-person', DIM);
  const root = openLmdb({ path: dir, readOnly: true, compression: false });
  const db = root.openDB<Uint8Array, [string, string]>({ name: 'templates', encoding: 'binary' });
  const bufs = [new Float32Array(BLOCK * DIM), new Float32Array(BLOCK * DIM)];
  let which = 0;
  let pending: Promise<unknown> | undefined;
  let bytes = new Uint8Array(bufs[0].buffer);
  let keys: string[] = [];
  const flush = async () => {
    const data = bufs[which].subarray(0, keys.length * DIM);
    await pending;
    pending = c.bulkLoad(data, keys);
    which ^= 1;
    bytes = new Uint8Array(bufs[which].buffer);
    keys = [];
  };
  for (const { key, value } of entriesWithPrefix(db, [account])) {
    bytes.set(value, keys.length * DIM * 4);
    keys.push(key[1]);
    if (keys.length === BLOCK) await flush();
  }
  if (keys.length) await flush();
  await pending;
  return c.size;
}

async function main(): Promise<void> {
  const [mode, dir, name] = process.argv.slice(2);
  if (mode === 'seal-cost') return sealCost(Number(dir), Number(name ?? 5));
  const t0 = performance.now();
  const loaded = mode === 'segments' ? await segments(dir, name)
    : mode === 'plain-segments' ? await plainSegments(dir, name) : await perPerson(dir, name);
  console.log(JSON.stringify({ mode, seconds: (performance.now() - t0) / 1000, loaded }));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
