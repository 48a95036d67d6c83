// npm run calibrate:int8 — makes models/int8-calibration.json, the activation table the install-time int8
// rewrite reads (scripts/onnx-quantise.js). Run by hand, once per change of a network or of this method, on
// LFW DevTrain images (../shared/data/lfw-view1; never DevTest, which the accuracy guards measure on). Each
// float32 network gets the inputs the engine feeds it: the template networks the engine's aligned face
// crops; the detector the whole photo letterboxed to 320x240, the landmark network the grey square face
// crop and the liveness network the 2.7x colour crop, as bench/baseline-pipeline.ts makes them (the
// engine's preprocessing in TypeScript, every face of every photo). ../shared/data/pad has no training
// split, so the liveness network is calibrated on bona fide DevTrain faces only and pad stays held out.
// Each network runs in onnxruntime-node with every intermediate float tensor exposed, and each tensor's
// range becomes a uint8 scale and zero point: by default the range of least squared quantisation error
// over a histogram of 2048 bins between the observed extremes (INT8_CALIBRATION_METHOD=percentile: the
// INT8_CALIBRATION_PERCENTILE, default 99.99, percentile). INT8_CALIBRATION_IMAGES (default 400) sets how
// many DevTrain images, evenly spaced in sorted order. --models detect,landmark (default: every network
// below) measures only those and keeps the other networks' tables as they are in the file. The histograms
// are kept in bench/out/int8-calibration-stats.json: --from-stats remakes the table from them (another
// range method) without running the networks again.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { createEngine } from '../src/engine';
import { readManifest, type ManifestModel } from '../src/engine/template-spec';
import { packageRoot } from '../src/package-root';
import { createBaseline, type ModelId } from './baseline-pipeline';
import { loadRgb, outDir, printJsonLine, requireSharedData } from './common';
import { centralFace, readPairs } from './lfw-data';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parseModel, serialiseModel, addFloatOutput } = require('../../scripts/onnx-model');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { prepareForInt8 } = require('../../scripts/onnx-quantise');

const IMAGES = Math.max(10, Number(process.env.INT8_CALIBRATION_IMAGES ?? 400));
const PERCENTILE = Number(process.env.INT8_CALIBRATION_PERCENTILE ?? 99.99);
const BINS = 2048;
const METHOD = process.env.INT8_CALIBRATION_METHOD ?? 'mse';
const CROP = 112;
/** Networks calibrated on what bench/baseline-pipeline.ts feeds them (the others: the template networks). */
const PIPELINE_NETWORKS: ModelId[] = ['detect', 'landmark', 'liveness'];

/** The network input from the engine's 112x112 RGB aligned crop, as the native embedder makes it. */
function networkInput(crop: Uint8Array, model: ManifestModel): Float32Array {
  const plane = CROP * CROP;
  const out = new Float32Array(3 * plane);
  const bgr = model.input.channels === 'BGR';
  for (let c = 0; c < 3; c++) {
    const from = bgr ? 2 - c : c;
    const { mean, std } = { mean: model.input.mean[c], std: model.input.std[c] };
    for (let i = 0; i < plane; i++) out[c * plane + i] = (crop[i * 3 + from] - mean) / std;
  }
  return out;
}

interface Range { min: number; max: number; hist?: Float64Array }

/** uint8 scale and zero point covering [lo, hi] (which always includes 0, so zero is exact). */
function uint8Params(lo: number, hi: number): { scale: number; zero_point: number } {
  const min = Math.min(0, lo), max = Math.max(0, hi);
  const scale = Math.fround(max > min ? (max - min) / 255 : 1);
  const zeroPoint = Math.max(0, Math.min(255, Math.round(-min / scale)));
  return { scale, zero_point: zeroPoint };
}

/** The value below which `p` percent of the histogram's mass lies (for the top end) or above (bottom end). */
function percentileRange(r: Range, p: number): [number, number] {
  const hist = r.hist!;
  const total = hist.reduce((a, b) => a + b, 0);
  const cut = total * (1 - p / 100);
  const width = (r.max - r.min) / BINS;
  let acc = 0, lo = r.min, hi = r.max;
  for (let i = 0; i < BINS; i++) { acc += hist[i]; if (acc > cut) { lo = r.min + i * width; break; } }
  acc = 0;
  for (let i = BINS - 1; i >= 0; i--) { acc += hist[i]; if (acc > cut) { hi = r.min + (i + 1) * width; break; } }
  return [lo, hi];
}

type Stats = Record<string, Record<string, { min: number; max: number; hist: number[] }>>;

/** The chosen DevTrain images' paths. */
function devTrainImages(lfwDir: string): string[] {
  const names = [...new Set(readPairs(lfwDir, 'pairsDevTrain.txt').flatMap((p) => [p.a, p.b]))].sort();
  const step = names.length / Math.min(IMAGES, names.length);
  return Array.from({ length: Math.min(IMAGES, names.length) }, (_, i) => path.join(lfwDir, 'images', names[Math.floor(i * step)]));
}

/** Each template network's inputs: the engine's own aligned crops (the float32 networks: the crop does not
 *  depend on them). */
async function templateInputs(images: string[], ids: string[]): Promise<Map<string, Float32Array[]>> {
  if (!ids.length) return new Map();
  const engine = await createEngine({ precision: 'float32' });
  const crops: Uint8Array[] = [];
  for (const file of images) {
    const image = await loadRgb(file);
    const face = centralFace(await engine.analyze(image, { maxFaces: 8, crop: true, embed: false }), image.width, image.height);
    if (face?.alignedCrop) crops.push(face.alignedCrop);
  }
  await engine.close();
  console.log(`${crops.length} aligned crops from ${images.length} DevTrain images`);
  const manifest = readManifest();
  return new Map(ids.map((id) => [id, crops.map((c) => networkInput(c, manifest.models.find((m) => m.id === id)!))]));
}

/** The detector's, landmark and liveness networks' inputs as the pipeline feeds them, every face's. */
async function pipelineInputs(images: string[], ids: string[]): Promise<Map<string, Float32Array[]>> {
  const inputs = new Map<string, Float32Array[]>(ids.map((id) => [id, []]));
  const pipeline = await createBaseline({ threads: 1, onInput: (id, input) => inputs.get(id)?.push(Float32Array.from(input)) });
  for (const file of images) await pipeline.analyze(await loadRgb(file));
  await pipeline.close();
  console.log(`${ids.map((id) => `${id} ${inputs.get(id)!.length}`).join(', ')} inputs from ${images.length} DevTrain images`);
  return inputs;
}

/**
 * The tensors a table covers: the input and every node's float output that is not a graph output. Shape
 * and Constant outputs are not activations, nor is what is computed from them through a node's first
 * input (the shape arithmetic before a Reshape); exposing those as float outputs would fail.
 */
function calibratedTensors(graph: { nodes: { opType: string; inputs: string[]; outputs: string[] }[]; outputNames: string[] }, input: string): string[] {
  const notActivations = new Set<string>();
  const tensors = [input];
  for (const n of graph.nodes) {
    if (n.opType === 'Shape' || n.opType === 'Constant' || notActivations.has(n.inputs[0])) {
      for (const out of n.outputs) notActivations.add(out);
      continue;
    }
    for (const out of n.outputs) if (!graph.outputNames.includes(out)) tensors.push(out);
  }
  return tensors;
}

/** Per tensor of one network: the extremes and a histogram between them, over the inputs. */
async function measureNetwork(model: ManifestModel, feeds: Float32Array[]): Promise<Stats[string]> {
  const graph = parseModel(fs.readFileSync(path.join(packageRoot(), 'models', model.file)));
  prepareForInt8(graph);  // the tensors the int8 form quantises
  const tensors = calibratedTensors(graph, model.input.name);
  for (const t of tensors.slice(1)) addFloatOutput(graph, t);
  const session = await ort.InferenceSession.create(serialiseModel(graph), { intraOpNumThreads: 1, graphOptimizationLevel: 'basic' });
  const shape = model.input.shape;
  // two passes: the extremes, then a histogram between them
  const ranges = new Map<string, Range>(tensors.map((t) => [t, { min: Infinity, max: -Infinity }]));
  for (const pass of [0, 1]) {
    for (const input of feeds) {
      const results = await session.run({ [model.input.name]: new ort.Tensor('float32', input, shape) });
      for (const t of tensors) {
        const values = t === model.input.name ? input : results[t].data as Float32Array;
        const r = ranges.get(t)!;
        if (pass === 0) {
          for (const v of values) { if (v < r.min) r.min = v; if (v > r.max) r.max = v; }
        } else {
          r.hist ??= new Float64Array(BINS);
          const scale = BINS / (r.max - r.min || 1);
          for (const v of values) r.hist[Math.min(BINS - 1, Math.floor((v - r.min) * scale))]++;
        }
      }
    }
  }
  await session.release();
  console.log(`${model.id}: ${tensors.length} tensors`);
  return Object.fromEntries(tensors.map((t) => {
    const r = ranges.get(t)!;
    return [t, { min: r.min, max: r.max, hist: Array.from(r.hist!) }];
  }));
}

interface Measured { stats: Stats; images: number; inputs: Record<string, number> }

/** Per network, per tensor: the extremes and a histogram between them. */
async function measure(ids: string[]): Promise<Measured> {
  const data = requireSharedData('calibrate:int8');
  const images = devTrainImages(path.join(data, 'lfw-view1'));
  const piped = ids.filter((id) => (PIPELINE_NETWORKS as string[]).includes(id));
  const inputs = new Map([
    ...(await templateInputs(images, ids.filter((id) => !piped.includes(id)))),
    ...(piped.length ? await pipelineInputs(images, piped) : []),
  ]);
  const manifest = readManifest();
  const stats: Stats = {};
  const counts: Record<string, number> = {};
  for (const id of ids) {
    counts[id] = inputs.get(id)!.length;
    stats[id] = await measureNetwork(manifest.models.find((m) => m.id === id)!, inputs.get(id)!);
    inputs.delete(id);  // each network's inputs freed once measured
  }
  return { stats, images: images.length, inputs: counts };
}

/**
 * The range whose uint8 quantisation has the least expected squared error over the histogram: clipping
 * (values beyond the range) against rounding (a step squared / 12 for each value inside), over ranges
 * that keep a fraction of each observed extreme.
 */
function mseRange(r: Range): [number, number] {
  const hist = r.hist!;
  const width = (r.max - r.min) / BINS;
  let best: [number, number] = [r.min, r.max];
  let bestError = Infinity;
  for (let k = 100; k >= 5; k--) {
    const lo = Math.min(0, r.min * (k / 100)), hi = Math.max(0, r.max * (k / 100));
    const step = (hi - lo) / 255;
    if (!(step > 0)) continue;
    let error = 0;
    for (let i = 0; i < BINS; i++) {
      if (!hist[i]) continue;
      const v = r.min + (i + 0.5) * width;
      error += hist[i] * (v < lo ? (lo - v) ** 2 : v > hi ? (v - hi) ** 2 : (step * step) / 12);
    }
    if (error < bestError) { bestError = error; best = [lo, hi]; }
  }
  return best;
}

/** The networks to measure: --models a,b, else the template networks and the pipeline's. */
function chosenNetworks(): string[] {
  const manifest = readManifest();
  const all = [...manifest.template.models.map((m) => m.id), ...PIPELINE_NETWORKS];
  const i = process.argv.indexOf('--models');
  if (i < 0) return all;
  const ids = (process.argv[i + 1] ?? '').split(',').filter(Boolean);
  const unknown = ids.filter((id) => !all.includes(id));
  if (!ids.length || unknown.length) throw new Error(`--models takes some of ${all.join(',')} (has ${process.argv[i + 1]})`);
  return ids;
}

async function main() {
  const statsFile = path.join(outDir(), 'int8-calibration-stats.json');
  let measured: Measured;
  if (process.argv.includes('--from-stats')) measured = JSON.parse(fs.readFileSync(statsFile, 'utf8'));
  else {
    measured = await measure(chosenNetworks());
    fs.writeFileSync(statsFile, JSON.stringify(measured));
  }
  const manifest = readManifest();
  const file = path.join(packageRoot(), 'models', 'int8-calibration.json');
  // the networks not measured now keep their tables
  const previous = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : { models: {}, method: {} };
  const tables: Record<string, Record<string, { scale: number; zero_point: number }>> = { ...previous.models };
  for (const [id, tensors] of Object.entries(measured.stats)) {
    const input = manifest.models.find((m) => m.id === id)!.input.name;
    tables[id] = Object.fromEntries(Object.entries(tensors).map(([t, r]) => {
      // The network input's range is known exactly: keep all of it.
      const range = { ...r, hist: Float64Array.from(r.hist) };
      const [lo, hi] = t === input ? [r.min, r.max] : METHOD === 'mse' ? mseRange(range) : percentileRange(range, PERCENTILE);
      return [t, uint8Params(lo, hi)];
    }));
  }
  const inputs = { ...previous.method.inputs, ...measured.inputs };
  // a new file renamed over the old (which may be a hard link to another checkout's copy)
  fs.writeFileSync(`${file}.new`, `${JSON.stringify({
    $comment: 'Activation scales and uint8 zero points per tensor of each network, for the int8 rewrite ' +
      '(scripts/onnx-quantise.js). Made by bench/int8-calibration.ts (npm run calibrate:int8) from the inputs the engine ' +
      'feeds each network on LFW DevTrain images (method.inputs: how many per network).',
    method: { images: measured.images, range: METHOD === 'mse' ? 'least squared error' : `percentile ${PERCENTILE}`, bins: BINS, inputs },
    models: tables,
  }, null, 1)}\n`);
  fs.renameSync(`${file}.new`, file);
  printJsonLine({ bench: 'int8-calibration', images: measured.images, inputs: measured.inputs, range: METHOD, models: Object.keys(measured.stats) });
}

main().catch((e) => { console.error(e); process.exit(1); });
