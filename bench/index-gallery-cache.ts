// npm run bench:index-gallery-cache — a PostgreSQL node's identify path at the index, side by side in one
// process: the gallery of int8 codes that re-ranks from the node's gallery cache (src/storage/postgres/
// gallery-cache.ts: an LMDB environment on disk, one AES-256-GCM open per candidate, as the node runs it)
// against the gallery that keeps float32 copies (the path it replaces). BENCH_CACHE_PERSONS clustered
// templates (default 1M: 1.25 per identity, so near twins abound), the same queries in alternating order:
// median latency of one identify (top 1) each and their paired ratio, and recall@1 of both against a float32
// brute force. Resident memory is bench:scale's (whole node processes). Ends with one JSON line.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { IndexGallery } from '../src/matching/index-gallery';
import { similarityIndex } from '../src/similarity-index/similarity-index';
import { DataKeySealer } from '../src/storage/crypto/sealer';
import { storageBinding } from '../src/storage/native-storage';
import { GalleryCache } from '../src/storage/postgres/gallery-cache';
import { TEMPLATES_PLACE } from '../src/storage/postgres/persons';
import { printJsonLine } from './common';
import { pairedLatency } from './index-rows';

const N = Number(process.env.BENCH_CACHE_PERSONS ?? 1_000_000);
const DIM = 704;
const QUERIES = Number(process.env.BENCH_CACHE_QUERIES ?? 1000);
const ROUNDS = Number(process.env.BENCH_CACHE_ROUNDS ?? 1000);
const ACCOUNT = 'bench';
const MODEL = 'bench-model';
const BLOCK = 16384;

/** xorshift with Box-Muller normals: the same data every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  const u = () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return (s + 1) / 4294967297;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

function normalise(v: Float32Array, off: number): void {
  let ss = 0;
  for (let d = 0; d < DIM; d++) ss += v[off + d] ** 2;
  const inv = 1 / Math.sqrt(ss);
  for (let d = 0; d < DIM; d++) v[off + d] *= inv;
}

/** Row i of identity i % ids: a centre plus noise (cosine ~0.85 to it), so persons of one identity are near twins. */
function row(out: Float32Array, off: number, identity: number, noiseSeed: number): void {
  const c = rng(identity + 1), n = rng(noiseSeed + 7_000_003);
  for (let d = 0; d < DIM; d++) out[off + d] = c() + 0.6 * n();
  normalise(out, off);
}

async function main(): Promise<void> {
  const ids = Math.max(1, Math.round(N / 1.25));
  const keys = Array.from({ length: N }, (_, i) => `person-${String(i).padStart(8, '0')}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-gallery-cache-'));
  const sealer = new DataKeySealer(crypto.createSecretKey(crypto.randomBytes(32)));
  const { cache } = GalleryCache.open(dir);
  const float32 = new IndexGallery(`bench-float32-${process.pid}`);
  const cached = new IndexGallery(`bench-cached-${process.pid}`, (personIds) =>
    cache.read(ACCOUNT, personIds, (personId, sealed) => {
      const plain = sealer.open(TEMPLATES_PLACE, [ACCOUNT, personId, MODEL], sealed);
      return new Float32Array(plain.buffer, plain.byteOffset, plain.byteLength >> 2);
    }));
  try {
    const t0 = performance.now();
    await cache.beginFill('bench', MODEL, false);
    const block = new Float32Array(BLOCK * DIM);
    for (let at = 0; at < N; at += BLOCK) {
      const count = Math.min(BLOCK, N - at);
      for (let i = 0; i < count; i++) row(block, i * DIM, (at + i) % ids, at + i);
      const data = block.subarray(0, count * DIM);
      const blockKeys = keys.slice(at, at + count);
      await float32.load(blockKeys, data, DIM, { clear: at === 0 });
      await cached.load(blockKeys, data, DIM, { clear: at === 0 });
      const sealed = blockKeys.map((k, i) => sealer.seal(TEMPLATES_PLACE, [ACCOUNT, k, MODEL],
        new Uint8Array(data.buffer, data.byteOffset + i * DIM * 4, DIM * 4)));
      const offsets = new Uint32Array(count + 1);
      sealed.forEach((s, i) => { offsets[i + 1] = offsets[i] + s.length; });
      await cache.putBlock(ACCOUNT, blockKeys, Buffer.concat(sealed), offsets);
    }
    await cache.finishFill(1, undefined);
    // As a node does after its build: the map's pages leave the resident set.
    storageBinding()?.adviseMappedFile(cache.dataFile, 'release');
    const buildS = (performance.now() - t0) / 1000;
    console.log(`${N.toLocaleString('en-US')} persons: both galleries and the cache built in ${buildS.toFixed(1)} s`);

    // Queries: another sample of a stored identity (a new photo of an enrolled person).
    const queries = new Float32Array(QUERIES * DIM);
    for (let j = 0; j < QUERIES; j++) row(queries, j * DIM, (j * 7919) % ids, N + 1_000_000 + j);
    const q = (j: number) => queries.subarray((j % QUERIES) * DIM, (j % QUERIES + 1) * DIM);
    const exact = await similarityIndex().collection(`bench-float32-${process.pid}`)!.exactSearchBatch(queries, { k: 1 });
    let hitF = 0, hitC = 0;
    for (let j = 0; j < QUERIES; j++) {
      const want = exact[j][0]?.key;
      if ((await float32.search(q(j), 1, -1))[0]?.personId === want) hitF++;
      if ((await cached.search(q(j), 1, -1))[0]?.personId === want) hitC++;
    }
    const latency = await pairedLatency((i) => float32.search(q(i), 1, -1), (i) => cached.search(q(i), 1, -1), ROUNDS);
    const result = {
      bench: 'index-gallery-cache', persons: N, dim: DIM, queries: QUERIES, rounds: ROUNDS, kernel: similarityIndex().kernel,
      identifyMs: { float32: +latency.beforeMs.toFixed(3), cached: +latency.afterMs.toFixed(3) },
      cachedOverFloat32: +latency.medianRatio.toFixed(3),
      recallAt1: { float32: hitF / QUERIES, cached: hitC / QUERIES },
      cacheFileMB: Math.round(fs.statSync(cache.dataFile).size / 1e6),
    };
    console.log(`identify (top 1): float32 copies ${result.identifyMs.float32} ms, int8 + gallery cache ${result.identifyMs.cached} ms ` +
      `(paired median ratio ${result.cachedOverFloat32}); recall@1 ${result.recallAt1.float32} / ${result.recallAt1.cached}`);
    printJsonLine(result);
  } finally {
    float32.drop();
    cached.drop();
    await cache.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
