'use strict';
// Run by test/engine/arm64-smoke.test.ts twice: under this machine's node (the x64 reference) and under an arm64
// node in qemu. Node built-ins, node-gyp-build, the addon and libonnxruntime only: no TypeScript build,
// no sharp, nothing else that would need an arm64 install. It loads the addon the way an installed
// package does (node-gyp-build from the package folder), analyses one raw RGB photo and compares every
// SIMD kernel of the similarity index with the scalar one, then prints one JSON line.
// argv[2]: JSON { packageDir, ortLibrary, modelDir, templateNetworks, image: { file, width, height } }.
const fs = require('node:fs');

const job = JSON.parse(process.argv[2]);
const seconds = (since) => Number(((Date.now() - since) / 1000).toFixed(2));

/** Deterministic PRNG (mulberry32): both architectures see the same data. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const randomCodes = (n, rand) => Int8Array.from({ length: n }, () => Math.floor(rand() * 255) - 127);
const randomFloats = (n, rand) => Float32Array.from({ length: n }, () => rand() * 2 - 1);

/** int8 kernels must be bit-identical to scalar; float32 within 1e-6 of the magnitude (summation order). */
function compareArithmetic(ix, kernel) {
  const rand = rng(7);
  const dotI8 = { checked: 0, mismatches: 0 };
  for (let n = 0; n <= 300; n++) {
    const a = randomCodes(n, rand);
    const c = randomCodes(n, rand);
    for (const [x, y] of [[a, c], [a, a], [new Int8Array(n).fill(-127), new Int8Array(n).fill(-127)]]) {
      dotI8.checked++;
      if (ix.dotI8(kernel, x, y) !== ix.dotI8('scalar', x, y)) dotI8.mismatches++;
    }
  }
  const scanI8 = { checked: 0, mismatches: 0 };
  for (const dim of [1, 15, 16, 17, 63, 64, 65, 512, 513]) {
    for (const [nq, nr] of [[1, 1], [3, 5], [4, 4], [5, 9], [9, 40]]) {
      const q = randomCodes(nq * dim, rand);
      const rows = randomCodes(nr * dim, rand);
      const want = ix.scanI8('scalar', q, rows, dim);
      const got = ix.scanI8(kernel, q, rows, dim);
      scanI8.checked += want.length;
      for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) scanI8.mismatches++;
    }
  }
  const dotF32 = { checked: 0, failures: 0, worstRelative: 0 };
  for (let n = 0; n <= 600; n += n < 70 ? 1 : 37) {
    const a = randomFloats(n, rand);
    const c = randomFloats(n, rand);
    let exact = 0;
    let magnitude = 0;
    for (let i = 0; i < n; i++) {
      exact += a[i] * c[i];
      magnitude += Math.abs(a[i] * c[i]);
    }
    const err = Math.abs(ix.dotF32(kernel, a, c) - exact);
    dotF32.checked++;
    dotF32.worstRelative = Math.max(dotF32.worstRelative, err / (magnitude + 1e-30));
    if (err > 1e-6 * magnitude + 1e-7) dotF32.failures++;
  }
  return { dotI8, scanI8, dotF32 };
}

/** A small collection searched with the scalar kernel and with `kernel`: same keys, scores within 1e-5. */
async function compareSearch(ix, kernel, collection) {
  const queries = randomFloats(8 * 512, rng(11));
  const want = await ix.search(collection, queries, { k: 10, kernel: 'scalar', threads: 1 });
  const got = await ix.search(collection, queries, { k: 10, kernel, threads: 1 });
  let keyMismatches = 0;
  let worstScoreDiff = 0;
  want.forEach((hits, j) => hits.keys.forEach((key, i) => {
    if (got[j].keys[i] !== key) keyMismatches++;
    worstScoreDiff = Math.max(worstScoreDiff, Math.abs(got[j].scores[i] - hits.scores[i]));
  }));
  return { queries: want.length, hits: want.reduce((n, h) => n + h.keys.length, 0), keyMismatches, worstScoreDiff };
}

async function analysePhoto(addon) {
  const started = Date.now();
  const engine = await addon.createEngine({
    modelDir: job.modelDir, ortLibrary: job.ortLibrary, threads: 1, flipAverage: false, templateNetworks: job.templateNetworks,
  });
  const loadSeconds = seconds(started);
  const { file, width, height } = job.image;
  const pixels = new Uint8Array(fs.readFileSync(file));
  const analysing = Date.now();
  const { faces } = await engine.analyze(pixels, width, height, {});
  const analyseSeconds = seconds(analysing);
  await engine.close();
  return {
    loadSeconds, analyseSeconds,
    faces: faces.map((f) => ({ box: f.box, liveness: f.liveness, embedding: Array.from(f.embedding) })),
  };
}

async function main() {
  const gypBuild = require(require.resolve('node-gyp-build', { paths: [job.packageDir] }));
  const addonPath = gypBuild.resolve(job.packageDir);
  const addon = require(addonPath);
  const ix = addon.index;
  const photo = await analysePhoto(addon);
  const kernelsStarted = Date.now();
  const collection = 'arm64-probe';
  ix.createCollection(collection, 512);
  const keys = Array.from({ length: 2000 }, (_, i) => `p${i}`);
  await ix.bulkLoad(collection, randomFloats(keys.length * 512, rng(5)), keys, true, 1);
  const kernelChecks = {};
  for (const kernel of ix.kernels().filter((k) => k !== 'scalar')) {
    kernelChecks[kernel] = { ...compareArithmetic(ix, kernel), search: await compareSearch(ix, kernel, collection) };
  }
  process.stdout.write(`${JSON.stringify({
    arch: process.arch, node: process.version, napi: process.versions.napi, addonPath,
    kernels: ix.kernels(), activeKernel: ix.activeKernel(), ...photo, kernelChecks,
    kernelSeconds: seconds(kernelsStarted),
  })}\n`);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
