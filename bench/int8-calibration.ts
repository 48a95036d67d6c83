// npm run calibrate:int8 — makes models/int8-calibration.json, the activation table the install-time int8
// rewrite reads (scripts/onnx-quantise.js). Run by hand, once per change of a network or of this method:
// the engine's aligned face crops of LFW DevTrain images (../shared/data/lfw-view1; never DevTest, which
// the accuracy guard in bench:lfw / bench:calibration measures on) are fed to each float32 network of the
// template through onnxruntime-node with every intermediate tensor exposed, and each tensor's range becomes
// a uint8 scale and zero point. Range: the INT8_CALIBRATION_PERCENTILE (default 99.99) percentile of the
// tensor's values over all the images, from a histogram of 2048 bins between the observed extremes.
// INT8_CALIBRATION_IMAGES (default 400) sets how many DevTrain images, evenly spaced in sorted order. The
// histograms are kept in bench/out/int8-calibration-stats.json: --from-stats remakes the table from them
// (another percentile) without running the networks again.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { createEngine } from '../src/engine';
import { readManifest, type ManifestModel } from '../src/engine/template-spec';
import { packageRoot } from '../src/package-root';
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

/** Per model, per tensor: the extremes and a histogram between them, over the crops. */
async function measure(): Promise<{ stats: Stats; images: number }> {
  const data = requireSharedData('calibrate:int8');
  const lfwDir = path.join(data, 'lfw-view1');
  const names = [...new Set(readPairs(lfwDir, 'pairsDevTrain.txt').flatMap((p) => [p.a, p.b]))].sort();
  const step = names.length / Math.min(IMAGES, names.length);
  const chosen = Array.from({ length: Math.min(IMAGES, names.length) }, (_, i) => names[Math.floor(i * step)]);

  // The engine's own aligned crops (the float32 networks: the crop does not depend on them).
  const engine = await createEngine({ precision: 'float32' });
  const crops: Uint8Array[] = [];
  for (const name of chosen) {
    const image = await loadRgb(path.join(lfwDir, 'images', name));
    const face = centralFace(await engine.analyze(image, { maxFaces: 8, crop: true, embed: false }), image.width, image.height);
    if (face?.alignedCrop) crops.push(face.alignedCrop);
  }
  await engine.close();
  console.log(`${crops.length} aligned crops from ${chosen.length} DevTrain images`);

  const manifest = readManifest();
  const stats: Stats = {};
  for (const { id } of manifest.template.models) {
    const model = manifest.models.find((m) => m.id === id)!;
    const graph = parseModel(fs.readFileSync(path.join(packageRoot(), 'models', model.file)));
    prepareForInt8(graph);  // the tensors the int8 form quantises
    const tensors: string[] = [model.input.name];
    for (const n of graph.nodes as { outputs: string[] }[]) {
      for (const out of n.outputs) if (!graph.outputNames.includes(out)) { addFloatOutput(graph, out); tensors.push(out); }
    }
    const session = await ort.InferenceSession.create(serialiseModel(graph), { intraOpNumThreads: 1, graphOptimizationLevel: 'basic' });
    const feeds = crops.map((c) => networkInput(c, model));
    // two passes: the extremes, then a histogram between them
    const ranges = new Map<string, Range>(tensors.map((t) => [t, { min: Infinity, max: -Infinity }]));
    for (const pass of [0, 1]) {
      for (const input of feeds) {
        const results = await session.run({ [model.input.name]: new ort.Tensor('float32', input, [1, 3, CROP, CROP]) });
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
    stats[id] = Object.fromEntries(tensors.map((t) => {
      const r = ranges.get(t)!;
      return [t, { min: r.min, max: r.max, hist: Array.from(r.hist!) }];
    }));
    console.log(`${id}: ${tensors.length} tensors`);
  }
  return { stats, images: crops.length };
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

async function main() {
  const statsFile = path.join(outDir(), 'int8-calibration-stats.json');
  let measured: { stats: Stats; images: number };
  if (process.argv.includes('--from-stats')) measured = JSON.parse(fs.readFileSync(statsFile, 'utf8'));
  else {
    measured = await measure();
    fs.writeFileSync(statsFile, JSON.stringify(measured));
  }
  const manifest = readManifest();
  const tables: Record<string, Record<string, { scale: number; zero_point: number }>> = {};
  for (const [id, tensors] of Object.entries(measured.stats)) {
    const input = manifest.models.find((m) => m.id === id)!.input.name;
    tables[id] = Object.fromEntries(Object.entries(tensors).map(([t, r]) => {
      // The network input's range is known exactly: keep all of it.
      const range = { ...r, hist: Float64Array.from(r.hist) };
      const [lo, hi] = t === input ? [r.min, r.max] : METHOD === 'mse' ? mseRange(range) : percentileRange(range, PERCENTILE);
      return [t, uint8Params(lo, hi)];
    }));
  }
  const crops = { length: measured.images };
  const file = path.join(packageRoot(), 'models', 'int8-calibration.json');
  fs.writeFileSync(file, `${JSON.stringify({
    $comment: 'Activation scales and uint8 zero points per tensor of each template network, for the int8 rewrite ' +
      '(scripts/onnx-quantise.js). Made by bench/int8-calibration.ts (npm run calibrate:int8) from LFW DevTrain crops.',
    method: { images: crops.length, range: METHOD === 'mse' ? 'least squared error' : `percentile ${PERCENTILE}`, bins: BINS },
    models: tables,
  }, null, 1)}\n`);
  printJsonLine({ bench: 'int8-calibration', images: crops.length, percentile: PERCENTILE, models: Object.keys(tables) });
}

main().catch((e) => { console.error(e); process.exit(1); });
