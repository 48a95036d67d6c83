// npm run bench:engine — latency of the native face engine on a 640x480 JPEG with one face, per stage and end to
// end (decode + analysis), p50/p95, with 1 and 2 threads; throughput with 2 concurrent requests; and,
// in the same run and interleaved with it (so machine noise hits both alike), the same models and steps
// orchestrated in TypeScript with onnxruntime-node + sharp (bench/baseline-pipeline.ts) as the baseline.
// Decode is the service's own (src/image/decode.ts: sharp, EXIF rotation, limits), identical for both sides.
// Separately: ORT graph optimisation level ALL vs EXTENDED per model (the NchwcTransformer question), which also
// picks the baseline's fastest level per model; and each rewritten model (models/manifest.json `rewrites`) against
// the model as published (converted to ONNX where published as tflite). Both sides load the same (rewritten) files.
// Targets: end-to-end <= 30 ms p50 on the 2-core machine, >= 1.5x faster than the baseline.
// BENCH_ENGINE_ITERATIONS (default 80) sets the measured iterations per configuration.
// --precision: only the template networks' precisions, side by side: the float32 and the int8 engine (1 thread
// each) on the same photo, interleaved, per-stage p50 / p95, their ratio and the cosine of their templates.
// Target: int8 photo -> template p50 <= 12 ms as identify runs it (detection, landmarks, template; without
// decode). Then the detector, landmark and liveness networks against their int8 forms (bench/int8-forms.ts,
// made from the committed calibration table):
// sessions with the engine's options and ONNX Runtime library, one thread, on the inputs the test image gives
// them, interleaved, in two blocks of BENCH_INT8_RUNS (default 150) runs each, p50 per block and the ratio.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';

import { createEngine, type FaceEngine, type StageTimings } from '../src/engine';
import { dot as cosine } from '../src/matching/dot';
import type { RgbImage } from '../src/engine/types';
import { decodeImageBytes } from '../src/image/decode';
import { packageRoot } from '../src/package-root';
import {
  createBaseline, createSession, manifestModels, MODEL_IDS, NATIVE_LEVELS, templateNets,
  type BaselinePipeline, type BaselineTimings, type GraphLevel, type ModelId,
} from './baseline-pipeline';
import { mapLimit, percentile, printJsonLine, sharedDataDir } from './common';
import { INT8_FORMS, inputShape, int8FormBytes } from './int8-forms';

import * as ort from 'onnxruntime-node';

const ITERATIONS = Math.max(5, Number(process.env.BENCH_ENGINE_ITERATIONS ?? 80));
const WARMUP = 5;
const THROUGHPUT_REQUESTS = 24;   // per block; two blocks per configuration
const LEVEL_RUNS = 20;            // per level per model in the graph-level check
const FEATURE_LEVEL_RUNS = 50;    // fr_feature: the documented NchwcTransformer measurement
const REWRITE_RUNS = 50;          // per form per rewritten model
const TARGET_MS = 30, TARGET_RATIO = 1.5;
const LIMITS = { maxBytes: 20 * 1024 * 1024, maxPixels: 100_000_000 };

const round = (v: number, d = 2) => (Number.isFinite(v) ? +v.toFixed(d) : v);
const ID_W = Math.max(...MODEL_IDS.map((id) => id.length));  // model column of the tables
const median = (v: number[]) => percentile(v, 50);

// ---- the test image ---------------------------------------------------------------------------------------

interface TestImage { jpeg: Buffer; source: string; crop: { left: number; top: number; width: number; height: number } }

async function decode(jpeg: Buffer): Promise<RgbImage> {
  return decodeImageBytes('image', jpeg, LIMITS);
}

/** A 640x480 quality-90 JPEG holding exactly one face, cut from a real photo at run time (never committed). */
async function makeTestImage(engine: FaceEngine): Promise<TestImage> {
  const candidates: string[] = [];
  const data = sharedDataDir();
  if (data) {
    for (const n of [1, 2, 3, 4, 5]) candidates.push(path.join(data, 'identities', 'deepface', `img${n}.jpg`));
  }
  if (!candidates.some((f) => fs.existsSync(f))) {
    // Without shared data: the group photos of @vladmandic/face-api@1.7.15 demo/ (as test/helpers/sample-photos.ts,
    // which is not compiled to dist/), cropped around their largest face below.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { packTarball, extractEntries, cacheDir } = require(path.join(packageRoot(), 'scripts', 'npm-tarball'));
    const entries = [1, 2, 3, 4, 5, 6].map((i) => `package/demo/sample${i}.jpg`);
    candidates.push(...(extractEntries(packTarball('@vladmandic/face-api@1.7.15'), entries,
      path.join(cacheDir(), 'face-api-demo')) as string[]));
  }
  for (const file of candidates.filter((f) => fs.existsSync(f))) {
    const rgb = await decode(fs.readFileSync(file));
    const faces = await engine.analyze(rgb, { embed: false });
    if (!faces.length) continue;
    const f = faces[0].box;  // largest
    const cx = f.x + f.width / 2, cy = f.y + f.height / 2;
    // 4:3 crops centred on the largest face, from the widest the photo allows down to 2x the face.
    const widest = Math.min(rgb.width, (rgb.height * 4) / 3);
    for (const w of [widest, f.width * 3, f.width * 2.2].filter((w) => w <= widest && w >= f.width * 1.5)) {
      const width = Math.floor(w), height = Math.floor((w * 3) / 4);
      const left = Math.round(Math.min(Math.max(cx - width / 2, 0), rgb.width - width));
      const top = Math.round(Math.min(Math.max(cy - height / 2, 0), rgb.height - height));
      const jpeg = await sharp(Buffer.from(rgb.data.buffer, rgb.data.byteOffset, rgb.data.byteLength),
        { raw: { width: rgb.width, height: rgb.height, channels: 3 } })
        .extract({ left, top, width, height }).resize(640, 480, { fit: 'fill' }).jpeg({ quality: 90 }).toBuffer();
      const check = await engine.analyze(await decode(jpeg), { embed: false });
      if (check.length === 1) return { jpeg, source: file, crop: { left, top, width, height } };
    }
  }
  throw new Error('no photo gave a 640x480 crop with exactly one face');
}

// ---- configurations ---------------------------------------------------------------------------------------

type StageName = 'decode' | 'detect' | 'landmarks' | 'attributes' | 'eyes' | 'liveness' | 'quality' | 'embed' | 'pipeline' | 'identify' | 'e2e';

interface Config {
  name: string;
  kind: 'native' | 'baseline';
  threads: number;
  run(rgb: RgbImage): Promise<{ faces: number; stages: Partial<Record<StageName, number>>; embedding?: Float32Array }>;
  samples: Partial<Record<StageName, number[]>>;
}

function nativeConfig(engine: FaceEngine, threads: number): Config {
  return {
    name: `native_t${threads}`, kind: 'native', threads, samples: {},
    async run(rgb) {
      const { faces, timings } = await engine.profile(rgb);
      const t: StageTimings = timings;
      return {
        faces: faces.length, embedding: faces[0]?.embedding,
        stages: {
          detect: t.detect, landmarks: t.landmarks, eyes: t.eyes, liveness: t.liveness, quality: t.quality,
          embed: t.embed, pipeline: t.total,
        },
      };
    },
  };
}

function baselineConfig(pipeline: BaselinePipeline): Config {
  return {
    name: `baseline_t${pipeline.threads}`, kind: 'baseline', threads: pipeline.threads, samples: {},
    async run(rgb) {
      const { faces, timings } = await pipeline.analyze(rgb);
      const t: BaselineTimings = timings;
      return {
        faces: faces.length, embedding: faces[0]?.embedding,
        stages: {
          detect: t.detect, landmarks: t.landmarks, attributes: t.attributes, eyes: t.eyes,
          liveness: t.liveness, quality: t.quality, embed: t.embed, pipeline: t.total,
        },
      };
    },
  };
}

/** One request as the service does it: decode the JPEG, analyse. Wall-clock end to end. */
async function request(config: Config, jpeg: Buffer, record: boolean): Promise<number> {
  const t0 = performance.now();
  const rgb = await decode(jpeg);
  const t1 = performance.now();
  const r = await config.run(rgb);
  const t2 = performance.now();
  if (r.faces !== 1) throw new Error(`${config.name}: ${r.faces} faces on the test image`);
  if (record) {
    const add = (k: StageName, v: number) => (config.samples[k] ??= []).push(v);
    add('decode', t1 - t0);
    for (const [k, v] of Object.entries(r.stages)) add(k as StageName, v);
    add('e2e', t2 - t0);
  }
  return t2 - t0;
}

// ---- graph optimisation level: ALL vs EXTENDED per model, on the real inputs ------------------------------

/** Run times (ms) of two sessions on one input after 5 warm-up runs each, alternating which goes first so
 *  drift and noise fall on both. */
async function timeInterleaved(sessions: ort.InferenceSession[], input: Float32Array, shape: number[], runs: number): Promise<number[][]> {
  const feeds = { [sessions[0].inputNames[0]]: new ort.Tensor('float32', input, shape) };
  const times: number[][] = sessions.map(() => []);
  for (let i = 0; i < 5; i++) for (const s of sessions) await s.run(feeds);
  for (let i = 0; i < runs; i++) {
    for (const k of i % 2 ? [1, 0] : [0, 1]) {
      const t0 = performance.now();
      await sessions[k].run(feeds);
      times[k].push(performance.now() - t0);
    }
  }
  return times;
}

interface LevelResult { all: number; extended: number; allP95: number; extendedP95: number; runs: number }

async function compareLevels(id: ModelId, threads: number, input: Float32Array, runs: number): Promise<LevelResult> {
  const levels: GraphLevel[] = ['all', 'extended'];
  const sessions = await Promise.all(levels.map((l) => createSession(id, threads, l)));
  const times = await timeInterleaved(sessions, input, manifestModels()[id].input.shape, runs);
  for (const s of sessions) await s.release();
  return {
    all: round(median(times[0]), 3), extended: round(median(times[1]), 3),
    allP95: round(percentile(times[0], 95), 3), extendedP95: round(percentile(times[1], 95), 3), runs,
  };
}

// ---- rewritten models vs the models as published, same inputs, interleaved -------------------------------

interface RewriteResult { rewrites: string[]; published: number; rewritten: number; speedup: number; maxAbsDiff: number; runs: number }

async function compareRewrites(inputs: Record<ModelId, Float32Array>): Promise<Partial<Record<ModelId, RewriteResult>>> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { extractPublishedModels } = require(path.join(packageRoot(), 'scripts', 'fetch-assets'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { cacheDir } = require(path.join(packageRoot(), 'scripts', 'npm-tarball'));
  const publishedDir = path.join(cacheDir(), 'published-models');
  extractPublishedModels(publishedDir);
  const models = manifestModels() as Record<ModelId, { file: string; rewrites?: string[] }>;
  const out: Partial<Record<ModelId, RewriteResult>> = {};
  for (const id of MODEL_IDS.filter((m) => models[m].rewrites?.length)) {
    // the float rewrite's own file (the engine may load the int8 form of a template network instead)
    const sessions = [await createSession(id, 1, 'all', path.join(publishedDir, models[id].file)),
      await createSession(id, 1, 'all', path.join(packageRoot(), 'models', models[id].file))];
    const shape = manifestModels()[id].input.shape;
    const feeds = { [sessions[0].inputNames[0]]: new ort.Tensor('float32', inputs[id], shape) };
    const outputs: Float32Array[][] = [];
    for (const s of sessions) outputs.push(Object.values(await s.run(feeds)).map((t) => t.data as Float32Array));
    let maxAbsDiff = 0;
    outputs[0].forEach((a, k) => a.forEach((v, i) => { maxAbsDiff = Math.max(maxAbsDiff, Math.abs(v - outputs[1][k][i])); }));
    const times = await timeInterleaved(sessions, inputs[id], shape, REWRITE_RUNS);
    for (const s of sessions) await s.release();
    const published = median(times[0]), rewritten = median(times[1]);
    out[id] = {
      rewrites: models[id].rewrites!, published: round(published, 3), rewritten: round(rewritten, 3),
      speedup: round(published / rewritten), maxAbsDiff, runs: REWRITE_RUNS,
    };
  }
  return out;
}

// ---- report -------------------------------------------------------------------------------------------------

function stat(c: Config, k: StageName): { p50: number; p95: number } | null {
  const v = c.samples[k];
  return v?.length ? { p50: round(percentile(v, 50)), p95: round(percentile(v, 95)) } : null;
}

function pad(s: string, n: number, right = false): string {
  return right ? s.padEnd(n) : s.padStart(n);
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg().map((v) => round(v));
  console.log(`bench:engine — ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), load average ${loadBefore.join(' ')}; ` +
    `onnxruntime-node ${ort.env.versions.node}; sharp libvips ${sharp.versions.vips}; ${ITERATIONS} iterations per configuration`);

  const native1 = await createEngine({ threads: 1 });
  const native2 = await createEngine({ threads: 2 });
  const image = await makeTestImage(native1);
  const meta = await sharp(image.jpeg).metadata();
  console.log(`test image: ${image.source} crop ${JSON.stringify(image.crop)} -> ` +
    `${meta.width}x${meta.height} JPEG q90, ${image.jpeg.length} bytes`);
  const rgb = await decode(image.jpeg);

  // ---- which graph level is fastest for the baseline (and what the native's choice costs) ----
  const probe = await createBaseline({ threads: 1 });
  const probeResult = await probe.analyze(rgb);
  if (probeResult.faces.length !== 1) throw new Error(`baseline found ${probeResult.faces.length} faces on the test image`);
  const inputs = { ...probe.lastInputs } as Record<ModelId, Float32Array>;
  await probe.close();
  const levels: Record<string, Record<ModelId, LevelResult>> = {};
  const baselineLevels: Record<string, Record<ModelId, GraphLevel>> = {};
  for (const threads of [1, 2]) {
    const key = `t${threads}`;
    levels[key] = {} as Record<ModelId, LevelResult>;
    baselineLevels[key] = {} as Record<ModelId, GraphLevel>;
    for (const id of MODEL_IDS) {
      const r = await compareLevels(id, threads, inputs[id], id === 'feature' ? FEATURE_LEVEL_RUNS : LEVEL_RUNS);
      levels[key][id] = r;
      baselineLevels[key][id] = r.all <= r.extended ? 'all' : 'extended';
    }
  }

  console.log('\n== Graph optimisation level (onnxruntime-node sessions with the native session options, real inputs from the test image) ==');
  console.log(`${pad('model', ID_W, true)} ${pad('threads', 7)} ${pad('ALL p50', 9)} ${pad('EXT p50', 9)} ${pad('ALL/EXT', 8)} ${pad('runs', 5)}  native uses  baseline uses`);
  for (const threads of [1, 2]) {
    for (const id of MODEL_IDS) {
      const r = levels[`t${threads}`][id];
      console.log(`${pad(id, ID_W, true)} ${pad(String(threads), 7)} ${pad(r.all.toFixed(3), 9)} ${pad(r.extended.toFixed(3), 9)} ` +
        `${pad((r.all / r.extended).toFixed(2), 8)} ${pad(String(r.runs), 5)}  ${pad(NATIVE_LEVELS[id], 11, true)}  ${baselineLevels[`t${threads}`][id]}`);
    }
  }
  const rewrites = await compareRewrites(inputs);
  console.log(`\n== Rewritten models vs as published (1 thread, ALL, median of ${REWRITE_RUNS} interleaved runs, real inputs) ==`);
  for (const [id, r] of Object.entries(rewrites)) {
    console.log(`  ${pad(id, ID_W, true)} published ${r.published.toFixed(3)} ms, rewritten ${r.rewritten.toFixed(3)} ms -> ${r.speedup}x; ` +
      `outputs max |diff| ${r.maxAbsDiff.toExponential(2)} (${r.rewrites.join(' + ')})`);
  }
  const feature = { t1: levels.t1.feature, t2: levels.t2.feature };
  console.log(`\n== fr_feature (embedding) ALL vs EXTENDED, median of ${FEATURE_LEVEL_RUNS} runs each (the NchwcTransformer effect) ==`);
  for (const [k, r] of Object.entries(feature)) {
    console.log(`  ${k}: ALL ${r.all.toFixed(3)} ms (p95 ${r.allP95.toFixed(3)}), EXTENDED ${r.extended.toFixed(3)} ms ` +
      `(p95 ${r.extendedP95.toFixed(3)}) -> ALL/EXTENDED = ${(r.all / r.extended).toFixed(2)}` +
      `${r.all < r.extended ? `  -> ALL is faster here; EXTENDED would cost ~${(r.extended - r.all).toFixed(1)} ms per analysis` : ''}`);
  }

  const baseline1 = await createBaseline({ threads: 1, levels: baselineLevels.t1 });
  const baseline2 = await createBaseline({ threads: 2, levels: baselineLevels.t2 });
  const configs: Config[] = [nativeConfig(native1, 1), nativeConfig(native2, 2), baselineConfig(baseline1), baselineConfig(baseline2)];

  // ---- honesty check: same faces, same embedding ----
  const n1 = await native1.analyze(rgb), n2 = await native2.analyze(rgb);
  const b1 = (await baseline1.analyze(rgb)).faces;
  const nf = n1[0], bf = b1[0];
  let lmDiff = 0;
  for (let i = 0; i < 68; i++) lmDiff += Math.hypot(nf.landmarks[i].x - bf.landmarks[2 * i], nf.landmarks[i].y - bf.landmarks[2 * i + 1]) / 68;
  // Each network's part too: the template's cosine weights MobileFaceNet's by 0.38 only, so it could hide a
  // baseline that feeds one network wrongly.
  const networkCosines: Record<string, number> = {};
  let offset = 0;
  for (const { id, size } of templateNets()) {
    networkCosines[id] = round(partCosine(nf.embedding.subarray(offset, offset + size), bf.embedding.subarray(offset, offset + size)), 4);
    offset += size;
  }
  const agreement = {
    nativeFaces: n1.length, baselineFaces: b1.length,
    templateLength: { native: nf.embedding.length, baseline: bf.embedding.length, expected: offset },
    embeddingCosine: round(cosine(nf.embedding, bf.embedding), 4), networkCosines,
    nativeT1VsT2Cosine: round(cosine(nf.embedding, n2[0].embedding), 6),
    boxIou: round(boxIou(nf.box, bf.box), 4),
    landmarkMeanDiffPx: round(lmDiff, 2), faceSizePx: round(nf.box.width, 1),
    native: { yaw: round(nf.pose.yaw, 1), pitch: round(nf.pose.pitch, 1), roll: round(nf.pose.roll, 1), eyes: [round(nf.eyes.left, 3), round(nf.eyes.right, 3)], liveness: round(nf.liveness, 3), brightness: round(nf.brightness, 1), sharpness: round(nf.sharpness, 1), mouth: round(nf.mouthOpenness, 3), sunglasses: round(nf.sunglasses, 3) },
    baseline: { yaw: round(bf.pose.yaw, 1), pitch: round(bf.pose.pitch, 1), roll: round(bf.pose.roll, 1), eyes: [round(bf.eyes.left, 3), round(bf.eyes.right, 3)], liveness: round(bf.liveness, 3), brightness: round(bf.brightness, 1), sharpness: round(bf.sharpness, 1), mouth: round(bf.mouthOpenness, 3), sunglasses: round(bf.sunglasses, 3) },
  };
  console.log('\n== Agreement native vs baseline on the test image ==');
  console.log(`  faces: native ${agreement.nativeFaces}, baseline ${agreement.baselineFaces}; ${offset}-value template cosine ` +
    `${agreement.embeddingCosine} (per network ${JSON.stringify(networkCosines)}; native 1 vs 2 threads: ${agreement.nativeT1VsT2Cosine}); box IoU ${agreement.boxIou}; landmarks mean diff ${agreement.landmarkMeanDiffPx} px ` +
    `on a ${agreement.faceSizePx} px face`);
  console.log(`  native:   ${JSON.stringify(agreement.native)}`);
  console.log(`  baseline: ${JSON.stringify(agreement.baseline)}`);
  if (agreement.nativeFaces !== 1 || agreement.baselineFaces !== 1 || nf.embedding.length !== offset ||
      bf.embedding.length !== offset || agreement.embeddingCosine <= 0.95 || Object.values(networkCosines).some((c) => c <= 0.95)) {
    throw new Error('native and baseline disagree on the test image: the comparison would not be honest');
  }

  // ---- latency: every configuration once per round, the order rotating, so noise falls on all alike ----
  for (let i = 0; i < WARMUP; i++) for (const c of configs) await request(c, image.jpeg, false);
  for (let i = 0; i < ITERATIONS; i++) {
    for (let k = 0; k < configs.length; k++) await request(configs[(i + k) % configs.length], image.jpeg, true);
  }

  // ---- throughput with 2 concurrent requests, blocks interleaved ----
  const throughput: Record<string, { requestsPerSecond: number; p50: number; p95: number; requests: number }> = {};
  const tput: Record<string, { ms: number; lat: number[] }> = {};
  for (let block = 0; block < 2; block++) {
    for (let k = 0; k < configs.length; k++) {
      const c = configs[(block + k) % configs.length];
      const t0 = performance.now();
      const lat = await mapLimit(Array.from({ length: THROUGHPUT_REQUESTS }), 2, () => request(c, image.jpeg, false));
      const entry = (tput[c.name] ??= { ms: 0, lat: [] });
      entry.ms += performance.now() - t0;
      entry.lat.push(...lat);
    }
  }
  for (const c of configs) {
    const e = tput[c.name];
    throughput[c.name] = {
      requestsPerSecond: round((e.lat.length / e.ms) * 1000, 1), p50: round(percentile(e.lat, 50)),
      p95: round(percentile(e.lat, 95)), requests: e.lat.length,
    };
  }
  const loadAfter = os.loadavg().map((v) => round(v));

  // ---- table ----
  const rows: Array<[StageName, string]> = [
    ['decode', 'decode (sharp JPEG -> RGB)'], ['detect', 'detect'],
    ['landmarks', 'landmarks + pose'], ['eyes', 'eyes (2 runs)'],
    ['liveness', 'liveness'], ['quality', 'quality (align+warp+measures)'], ['embed', 'embed (both networks)'],
    ['pipeline', 'pipeline total (no decode)'], ['e2e', 'END-TO-END (decode+pipeline)'],
  ];
  const cell = (c: Config, k: StageName) => {
    const s = stat(c, k);
    return s ? `${s.p50.toFixed(2)} / ${s.p95.toFixed(2)}` : '';
  };
  const W = 17;
  console.log(`\n== Latency, ms p50 / p95 over ${ITERATIONS} interleaved iterations (640x480 JPEG, 1 face) ==`);
  console.log(`${pad('stage', 32, true)}${configs.map((c) => pad(c.name, W)).join('')}`);
  for (const [k, label] of rows) console.log(`${pad(label, 32, true)}${configs.map((c) => pad(cell(c, k), W)).join('')}`);
  console.log('  embed: fr_feature + MobileFaceNet + the template (no flip-averaging, the engine default). threads=2 (both sides)\n' +
    '  runs MobileFaceNet, liveness and the eye models beside fr_feature and quality: its stage times overlap (embed sums both\n' +
    '  lanes) and add up to more than the pipeline total.');

  const e2e = (name: string) => stat(configs.find((c) => c.name === name)!, 'e2e')!;
  const pipe = (name: string) => stat(configs.find((c) => c.name === name)!, 'pipeline')!;
  const ratio = {
    t1: round(e2e('baseline_t1').p50 / e2e('native_t1').p50),
    t2: round(e2e('baseline_t2').p50 / e2e('native_t2').p50),
    pipelineOnlyT1: round(pipe('baseline_t1').p50 / pipe('native_t1').p50),
    pipelineOnlyT2: round(pipe('baseline_t2').p50 / pipe('native_t2').p50),
    bestVsBest: round(Math.min(e2e('baseline_t1').p50, e2e('baseline_t2').p50) / Math.min(e2e('native_t1').p50, e2e('native_t2').p50)),
  };
  console.log(`\nratio baseline/native end-to-end p50: 1 thread ${ratio.t1}x, 2 threads ${ratio.t2}x, best vs best ${ratio.bestVsBest}x` +
    ` (without decode: ${ratio.pipelineOnlyT1}x, ${ratio.pipelineOnlyT2}x)`);
  console.log(`\n== Throughput, 2 concurrent requests (decode + analyse), ${2 * THROUGHPUT_REQUESTS} requests per configuration ==`);
  for (const c of configs) {
    const t = throughput[c.name];
    console.log(`  ${pad(c.name, 12, true)} ${t.requestsPerSecond.toFixed(1)} req/s, latency p50 ${t.p50.toFixed(2)} ms p95 ${t.p95.toFixed(2)} ms`);
  }
  const targets = {
    e2eP50Ms: TARGET_MS, ratio: TARGET_RATIO,
    e2eMet: { t1: e2e('native_t1').p50 <= TARGET_MS, t2: e2e('native_t2').p50 <= TARGET_MS },
    ratioMet: { t1: ratio.t1 >= TARGET_RATIO, t2: ratio.t2 >= TARGET_RATIO },
  };
  console.log(`targets: end-to-end p50 <= ${TARGET_MS} ms: t1 ${targets.e2eMet.t1 ? 'MET' : 'NOT MET'} (${e2e('native_t1').p50}), ` +
    `t2 ${targets.e2eMet.t2 ? 'MET' : 'NOT MET'} (${e2e('native_t2').p50}); >= ${TARGET_RATIO}x baseline: ` +
    `t1 ${targets.ratioMet.t1 ? 'MET' : 'NOT MET'} (${ratio.t1}x), t2 ${targets.ratioMet.t2 ? 'MET' : 'NOT MET'} (${ratio.t2}x)`);
  console.log(`load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} (shared 2-core machine: numbers are noisy)`);

  const stagesOf = (c: Config) => Object.fromEntries(rows.map(([k]) => [k, stat(c, k)]).filter(([, v]) => v));
  await Promise.all([native1.close(), native2.close(), baseline1.close(), baseline2.close()]);
  printJsonLine({
    bench: 'engine',
    image: { source: path.basename(image.source), crop: image.crop, width: meta.width, height: meta.height, bytes: image.jpeg.length, faces: 1 },
    iterations: ITERATIONS, cpus: os.cpus().length, load: { before: loadBefore, after: loadAfter },
    native: { t1: stagesOf(configs[0]), t2: stagesOf(configs[1]), levels: NATIVE_LEVELS },
    baseline: { t1: stagesOf(configs[2]), t2: stagesOf(configs[3]), levels: baselineLevels },
    ratio, throughput, targets, agreement, graphLevels: levels, featureLevels: feature, rewrites,
  });
}

/** Cosine of two parts of unit-length templates (the parts themselves are not unit length). */
function partCosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
}

function boxIou(a: { x: number; y: number; width: number; height: number }, b: { x: number; y: number; width: number; height: number }): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  return (w * h) / (a.width * a.height + b.width * b.height - w * h);
}

// ---- int8 vs float32 template networks (--precision) -------------------------------------------------------

const PRECISION_TARGET_MS = 12;
const INT8_FORM_RUNS = Math.max(20, Number(process.env.BENCH_INT8_RUNS ?? 150));

interface FormResult { float32: number[]; int8: number[]; ratio: number[]; maxAbsDiff: number; runs: number }

/** Each pipeline network's float file against its int8 form on the test image's inputs: p50 per block. */
async function compareInt8Forms(rgb: RgbImage): Promise<Record<string, FormResult>> {
  const probe = await createBaseline({ threads: 1 });
  if ((await probe.analyze(rgb)).faces.length !== 1) throw new Error('the baseline finds no single face on the test image');
  const inputs = { ...probe.lastInputs };
  await probe.close();
  const out: Record<string, FormResult> = {};
  for (const form of INT8_FORMS) {
    const sessions = [await createSession(form.id, 1, 'all'), await createSession(form.id, 1, 'all', int8FormBytes(form))];
    const shape = inputShape(form.id);
    const feeds = { [sessions[0].inputNames[0]]: new ort.Tensor('float32', inputs[form.id]!, shape) };
    const outputs: Float32Array[][] = [];
    for (const session of sessions) outputs.push(Object.values(await session.run(feeds)).map((t) => t.data as Float32Array));
    let maxAbsDiff = 0;
    outputs[0].forEach((a, k) => a.forEach((v, i) => { maxAbsDiff = Math.max(maxAbsDiff, Math.abs(v - outputs[1][k][i])); }));
    const r: FormResult = { float32: [], int8: [], ratio: [], maxAbsDiff: round(maxAbsDiff, 4), runs: INT8_FORM_RUNS };
    for (let block = 0; block < 2; block++) {
      const [f, q] = (await timeInterleaved(sessions, inputs[form.id]!, shape, INT8_FORM_RUNS)).map(median);
      r.float32.push(round(f, 3)); r.int8.push(round(q, 3)); r.ratio.push(round(f / q));
    }
    for (const session of sessions) await session.release();
    out[form.name] = r;
  }
  return out;
}

async function comparePrecisions(): Promise<void> {
  const loadBefore = os.loadavg().map((v) => round(v));
  const float32 = await createEngine({ threads: 1, precision: 'float32' });
  const int8 = await createEngine({ threads: 1, precision: 'int8' });
  if (float32.modelId === int8.modelId) throw new Error('the manifest has no int8 form of any template network');
  const image = await makeTestImage(float32);
  const rgb = await decode(image.jpeg);
  const [f] = await float32.analyze(rgb), [q] = await int8.analyze(rgb);
  const networkCosines: Record<string, number> = {};
  let offset = 0;
  for (const { id, size } of templateNets()) {
    networkCosines[id] = round(partCosine(f.embedding.subarray(offset, offset + size), q.embedding.subarray(offset, offset + size)), 4);
    offset += size;
  }
  const templateCosine = round(cosine(f.embedding, q.embedding), 4);
  const configs = [{ ...nativeConfig(float32, 1), name: 'float32_t1' }, { ...nativeConfig(int8, 1), name: 'int8_t1' }];
  for (const c of configs) c.samples = {};
  for (let i = 0; i < WARMUP; i++) for (const c of configs) await request(c, image.jpeg, false);
  for (let i = 0; i < ITERATIONS; i++) for (const k of i % 2 ? [1, 0] : [0, 1]) await request(configs[k], image.jpeg, true);
  await Promise.all([float32.close(), int8.close()]);
  // Photo -> template as identify runs it (services/operation-stages.ts): detection, the landmarks, the
  // template; the pipeline above also runs the eye, colour-liveness and quality stages enrolment needs.
  for (const c of configs) {
    const { detect, landmarks, embed } = c.samples;
    c.samples.identify = detect!.map((d, i) => d + landmarks![i] + embed![i]);
  }
  const stages: StageName[] = ['detect', 'landmarks', 'eyes', 'liveness', 'quality', 'embed', 'pipeline', 'identify', 'e2e'];
  console.log(`== float32 vs int8 template networks, ms p50 / p95 over ${ITERATIONS} interleaved iterations (1 thread, ${path.basename(image.source)}) ==`);
  console.log(`${pad('stage', 14, true)}${configs.map((c) => pad(c.name, 17)).join('')}  ratio`);
  for (const k of stages) {
    const [a, b] = configs.map((c) => stat(c, k));
    if (!a || !b) continue;
    console.log(`${pad(k, 14, true)}${[a, b].map((s) => pad(`${s.p50.toFixed(2)} / ${s.p95.toFixed(2)}`, 17)).join('')}  ${(a.p50 / b.p50).toFixed(2)}x`);
  }
  const pipelineP50 = stat(configs[1], 'pipeline')!.p50;
  const identifyP50 = stat(configs[1], 'identify')!.p50;
  console.log(`template cosine float32 vs int8 ${templateCosine} (per network ${JSON.stringify(networkCosines)}); ` +
    `int8 photo -> template p50 as identify runs it ${identifyP50} ms: target <= ${PRECISION_TARGET_MS} ms ${identifyP50 <= PRECISION_TARGET_MS ? 'MET' : 'NOT MET'}`);
  const forms = await compareInt8Forms(rgb);
  console.log(`\n== detector, landmark and liveness networks: float32 vs int8 form (1 thread, ${INT8_FORM_RUNS} interleaved runs a block), ms p50 ==`);
  for (const form of INT8_FORMS) {
    const r = forms[form.name];
    console.log(`  ${pad(form.name, 24, true)} float32 ${r.float32.map((v) => v.toFixed(3)).join(' / ')}, int8 ${r.int8.map((v) => v.toFixed(3)).join(' / ')}` +
      ` -> ${r.ratio.map((v) => `${v.toFixed(2)}x`).join(' / ')}; outputs max |diff| ${r.maxAbsDiff} (${form.why})`);
  }
  const loadAfter = os.loadavg().map((v) => round(v));
  console.log(`load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} (shared 2-core machine: compare the ratio)`);
  printJsonLine({
    bench: 'engine-precision', int8Forms: forms, iterations: ITERATIONS, image: path.basename(image.source), load: { before: loadBefore, after: loadAfter },
    float32: Object.fromEntries(stages.map((k) => [k, stat(configs[0], k)])), int8: Object.fromEntries(stages.map((k) => [k, stat(configs[1], k)])),
    ratio: {
      embed: round(stat(configs[0], 'embed')!.p50 / stat(configs[1], 'embed')!.p50), pipeline: round(stat(configs[0], 'pipeline')!.p50 / pipelineP50),
      identify: round(stat(configs[0], 'identify')!.p50 / identifyP50),
    },
    templateCosine, networkCosines, target: { identifyP50Ms: PRECISION_TARGET_MS, met: identifyP50 <= PRECISION_TARGET_MS },
  });
}

(process.argv.includes('--precision') ? comparePrecisions() : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
