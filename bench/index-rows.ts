// The parts of `npm run bench:index` about galleries whose index keeps only int8 rows (IndexGallery with a
// TemplateSource): the source of sealed per-person rows, recall against float32 brute force for several
// candidate counts, the code snapshot's export/import times, and the snapshot start-up of
// bench/index-snapshot-start.ts when that file exists.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';

import type { Collection, SearchHit, SimilarityIndex } from '../src/similarity-index/similarity-index';
import type { TemplateSource } from '../src/matching/index-gallery';
import { openBytes, sealBytes, secretKey } from '../src/storage/crypto/aead';

/** A full garbage collection (also without --expose-gc), so that RSS deltas count live memory only. */
export const collectGarbage: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

export function rss(): number {
  collectGarbage();
  return process.memoryUsage().rss;
}

const SLAB_ROWS = 65536;

/**
 * What the store's per-person rows will cost per candidate: each template sealed on its own with
 * AES-256-GCM (additional data = the person id, as a record's place), found through a Map by person id and
 * opened with openBytes. The sealed rows live in a few large slabs (one Buffer each would add ~100 B of
 * object overhead per person to the benchmark process, not to the index).
 */
export function sealedTemplateSource(keys: readonly string[], data: Float32Array, dim: number): { source: TemplateSource; opened: () => number } {
  const key = secretKey(crypto.randomBytes(32));
  const plainBytes = dim * 4;
  const sealedBytes = sealBytes(key, new Uint8Array(plainBytes), Buffer.from('x')).length;
  const slabs: Buffer[] = [];
  const rowOf = new Map<string, number>();
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  for (let i = 0; i < keys.length; i++) {
    if (i % SLAB_ROWS === 0) slabs.push(Buffer.allocUnsafe(Math.min(SLAB_ROWS, keys.length - i) * sealedBytes));
    sealBytes(key, bytes.subarray(i * plainBytes, (i + 1) * plainBytes), Buffer.from(keys[i])).copy(slabs[slabs.length - 1], (i % SLAB_ROWS) * sealedBytes);
    rowOf.set(keys[i], i);
  }
  let opened = 0;
  const source: TemplateSource = (ids) =>
    ids.map((id) => {
      const i = rowOf.get(id);
      if (i === undefined) return undefined;
      const at = (i % SLAB_ROWS) * sealedBytes;
      const plain = openBytes(key, slabs[Math.floor(i / SLAB_ROWS)].subarray(at, at + sealedBytes), Buffer.from(id), 'template');
      opened++;
      return plain.byteOffset % 4 === 0 ? new Float32Array(plain.buffer, plain.byteOffset, dim) : new Float32Array(Uint8Array.from(plain).buffer);
    });
  return { source, opened: () => opened };
}

export interface ChildMemory {
  persons: number;
  rowsOnly: boolean;
  statsPerTemplate: number;
  keysPerTemplate: number;
  rssPerTemplate: number;
}

/** Stats and RSS growth per template of a gallery loaded in a fresh process (bench/index-memory.ts). */
export function memoryInChild(persons: number, dim: number, rowsOnly: boolean): ChildMemory {
  const out = execFileSync(process.execPath, [path.join(__dirname, 'index-memory.js'), String(persons), String(dim), rowsOnly ? 'rows' : 'vectors'], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!) as ChildMemory;
}

export interface PairedLatency {
  rounds: number;
  /** Medians and minimums, ms. */
  beforeMs: number;
  afterMs: number;
  beforeBestMs: number;
  afterBestMs: number;
  /** Median over the rounds of after / before (the same query in both). */
  medianRatio: number;
}

/**
 * Before and after on the same query, round after round, in alternating order: on a shared machine the
 * load changes within seconds, and a pair run back to back sees the same load.
 */
export async function pairedLatency(before: (i: number) => Promise<unknown>, after: (i: number) => Promise<unknown>, rounds: number): Promise<PairedLatency> {
  const b: number[] = [], a: number[] = [], ratio: number[] = [];
  await before(0);
  await after(0);
  for (let i = 0; i < rounds; i++) {
    const time = async (fn: (i: number) => Promise<unknown>) => {
      const t0 = performance.now();
      await fn(i);
      return performance.now() - t0;
    };
    let tb: number, ta: number;
    if (i % 2 === 0) {
      tb = await time(before);
      ta = await time(after);
    } else {
      ta = await time(after);
      tb = await time(before);
    }
    b.push(tb);
    a.push(ta);
    ratio.push(ta / tb);
  }
  const med = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor((v.length - 1) / 2)];
  return { rounds, beforeMs: med(b), afterMs: med(a), beforeBestMs: Math.min(...b), afterBestMs: Math.min(...a), medianRatio: med(ratio) };
}

export interface CandidateRecall {
  candidates: number;
  recall1: number;
  recall10: number;
}

/**
 * Recall of "the best R rows by the int8 estimate, re-scored exactly" for several R at once: one search
 * of max(R) candidates per query (they come best first, so a prefix is the answer for a smaller R),
 * scored exactly against the templates in `data`.
 */
export async function candidateRecall(
  ix: SimilarityIndex, rows: Collection, queries: Float32Array, dim: number, k: number, data: Float32Array,
  rowOf: (key: string) => number, exact: SearchHit[][], counts: number[],
  recallOf: (got: SearchHit[][], want: SearchHit[][]) => { r1: number; r10: number },
): Promise<CandidateRecall[]> {
  const most = Math.max(...counts);
  const found = await rows.searchBatch(queries, { k: most });
  const scored = found.map((hits, j) => {
    const packed = new Float32Array(hits.length * dim);
    hits.forEach((h, i) => packed.set(data.subarray(rowOf(h.key) * dim, (rowOf(h.key) + 1) * dim), i * dim));
    const s = ix.cosines(queries.subarray(j * dim, (j + 1) * dim), packed);
    return hits.map((h, i) => ({ key: h.key, score: s[i] }));
  });
  return counts.map((r) => {
    const got = scored.map((hits) =>
      hits.slice(0, r).sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, k));
    const { r1, r10 } = recallOf(got, exact);
    return { candidates: r, recall1: r1, recall10: r10 };
  });
}

export interface SnapshotTimes {
  rows: number;
  exportMs: number;
  /** Import into a fresh collection, each time after the previous copy was dropped. */
  importMs: number[];
  importBestMs: number;
  importMedianMs: number;
  /** The same bytes of fresh memory allocated and written once by JS: this VM's page-fault floor. */
  freshTouchMs: number;
  sameSearches: boolean;
}

/** Export of `rows` and imports of the dump into fresh collections (rows-only), with a check that they search alike. */
export async function snapshotTimes(ix: SimilarityIndex, rows: Collection, queries: Float32Array, rounds = 3): Promise<SnapshotTimes> {
  let t = performance.now();
  const dump = await rows.exportCodes();
  const exportMs = performance.now() - t;
  const importMs: number[] = [];
  let sameSearches = true;
  for (let i = 0; i < rounds; i++) {
    const name = `${rows.name}-import`;
    ix.dropCollection(name);
    collectGarbage();
    const copy = ix.createCollection(name, rows.dim, { vectors: false });
    t = performance.now();
    await copy.importCodes(dump, { clear: true });
    importMs.push(performance.now() - t);
    if (i === 0) sameSearches = JSON.stringify(await copy.searchBatch(queries, { k: 10 })) === JSON.stringify(await rows.searchBatch(queries, { k: 10 }));
    ix.dropCollection(name);
  }
  t = performance.now();
  Buffer.allocUnsafeSlow(dump.codes.byteLength).fill(1);
  const freshTouchMs = performance.now() - t;
  const sorted = [...importMs].sort((a, b) => a - b);
  return {
    rows: dump.count, exportMs, importMs, importBestMs: sorted[0], importMedianMs: sorted[Math.floor((sorted.length - 1) / 2)],
    freshTouchMs, sameSearches,
  };
}

type MeasureSnapshotStart = (opts: { persons: number; cold: boolean }) => Promise<{ readyMs: number; details: Record<string, unknown> }>;

export interface StartMeasurement {
  persons: number;
  cold: boolean;
  readyMs?: number;
  details?: Record<string, unknown>;
  note?: string;
}

/**
 * Start-up from sealed code snapshots (bench/index-snapshot-start.ts, written alongside the snapshot
 * files), for each size cold and warm. When that file is absent or fails, a note says why instead.
 */
export async function snapshotStarts(sizes: number[]): Promise<StartMeasurement[]> {
  const file = path.join(__dirname, 'index-snapshot-start.js');
  if (!fs.existsSync(file)) {
    return sizes.flatMap((persons) => [true, false].map((cold) => ({ persons, cold, note: `not measured: ${path.basename(file)} is absent` })));
  }
  let measure: MeasureSnapshotStart | undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    measure = (require(file) as { measureSnapshotStart?: MeasureSnapshotStart }).measureSnapshotStart;
  } catch (err) {
    return sizes.flatMap((persons) => [true, false].map((cold) => ({ persons, cold, note: `not measured: ${path.basename(file)} does not load (${(err as Error).message.split('\n')[0]})` })));
  }
  const out: StartMeasurement[] = [];
  for (const persons of sizes) {
    for (const cold of [true, false]) {
      if (typeof measure !== 'function') {
        out.push({ persons, cold, note: 'not measured: index-snapshot-start exports no measureSnapshotStart' });
        continue;
      }
      try {
        const r = await measure({ persons, cold });
        out.push({ persons, cold, readyMs: r.readyMs, details: r.details });
      } catch (err) {
        out.push({ persons, cold, note: `not measured: ${(err as Error).message.split('\n')[0]}` });
      }
    }
  }
  return out;
}
