// npm run bench:fusion — would a second, independent embedding model help? On the LFW development view
// (../shared/data/lfw-view1): the engine's fr_feature alone, dlib's public-domain ResNet alone
// (bench/second-model.ts), and the two fused by score. Everything is chosen on DevTrain (the fusion weight,
// each score's scale, the thresholds) and reported on DevTest, plus TAR at FAR 1e-3 / 1e-4 / 1e-5 / 1e-6 over
// every cross-identity impostor pair, and the ORT run time of each model side by side (1 thread).
//
// Fusion: s = (a * cos_fr + b * cos_dlib) / (a + b) with a = (1 - w) / sd_fr, b = w / sd_dlib (each cosine
// scaled by its DevTrain standard deviation). That is exactly the cosine of the concatenated templates
// [sqrt(a) e_fr, sqrt(b) e_dlib] / sqrt(a + b), so a fused engine would keep one L2-normalised 640-d
// template and the same index.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { createEngine, cosine } from '../src/engine';
import { modelPath, nativeEquivalentOptions, NATIVE_LEVELS } from './baseline-pipeline';
import { loadRgb, mapLimit, outDir, percentile, printJsonLine, requireSharedData } from './common';
import { centralFace, readPairs, type Pair } from './lfw-data';
import { acceptRate, accuracyAt, bestThreshold, impostorScores, scorePairs, thresholdAtFar } from './lfw-scoring';
import { CHIP, dlibChip, secondModelFile, SECOND_MODEL_PACKAGE } from './second-model';

type Templates = Map<string, Float32Array>;

const l2 = (v: Float32Array) => {
  let s = 0;
  for (const x of v) s += x * x;
  const inv = 1 / Math.sqrt(s);
  return v.map((x) => x * inv);
};

/** fr_feature templates and dlib descriptors (both L2-normalised) of every image, cached in bench/out. */
async function templates(lfwDir: string, names: string[]): Promise<{ fr: Templates; dlib: Templates }> {
  const cacheFile = path.join(outDir(), 'lfw-fusion-templates.json');
  const engine = await createEngine({});
  const cached = fs.existsSync(cacheFile) ? JSON.parse(fs.readFileSync(cacheFile, 'utf8')) : null;
  const record: Record<string, { fr: number[]; dlib: number[] } | null> =
    cached?.modelId === engine.modelId && names.every((n) => n in cached.templates) ? cached.templates : {};
  if (!Object.keys(record).length) {
    const session = await ort.InferenceSession.create(secondModelFile(), nativeEquivalentOptions(1, 'all'));
    let done = 0;
    await mapLimit(names, 2, async (name) => {
      const image = await loadRgb(path.join(lfwDir, 'images', name));
      const face = centralFace(await engine.analyze(image, { maxFaces: 8 }), image.width, image.height);
      if (face?.embedding) {
        const input = new ort.Tensor('float32', dlibChip(image, face.landmarks), [1, 3, CHIP, CHIP]);
        const out = await session.run({ input });
        record[name] = { fr: Array.from(face.embedding), dlib: Array.from(l2(out.descriptor.data as Float32Array)) };
      } else {
        record[name] = null;
      }
      if (++done % 500 === 0) process.stderr.write(`  ${done}/${names.length} images\n`);
    });
    await session.release();
    fs.writeFileSync(cacheFile, JSON.stringify({ modelId: engine.modelId, templates: record }));
  }
  await engine.close();
  const fr: Templates = new Map(), dlib: Templates = new Map();
  for (const [name, t] of Object.entries(record)) {
    if (t) { fr.set(name, Float32Array.from(t.fr)); dlib.set(name, Float32Array.from(t.dlib)); }
  }
  return { fr, dlib };
}

type Scorer = (a: string, b: string) => number;

function standardDeviation(values: number[]): number {
  const m = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
}

function evaluate(label: string, score: Scorer, have: Templates, train: Pair[], test: Pair[]) {
  const known = (a: string, b: string) => (have.has(a) && have.has(b) ? score(a, b) : null);
  const trainScored = scorePairs(train, known).scored;
  const testScored = scorePairs(test, known).scored;
  const threshold = bestThreshold(trainScored);
  const impostors = impostorScores([...have.keys()], score);
  const genuine = testScored.filter((s) => s.same).map((s) => s.score);
  const tar: Record<string, number> = {};
  for (const [key, far] of [['1e-3', 1e-3], ['1e-4', 1e-4], ['1e-5', 1e-5], ['1e-6', 1e-6]] as const) {
    tar[key] = +(100 * acceptRate(genuine, thresholdAtFar(impostors, far))).toFixed(1);
  }
  return {
    label, devTrainAccuracy: +(100 * accuracyAt(trainScored, threshold)).toFixed(2),
    devTestAccuracy: +(100 * accuracyAt(testScored, threshold)).toFixed(2),
    threshold: +threshold.toFixed(4), tarAtFar: tar, impostorPairs: impostors.length,
  };
}

/** Uniform [-1, 1) noise, seeded: a constant input runs faster than a real face (fr_feature 7.6 vs 10.9 ms
 *  measured); noise runs like a real face. */
function noise(n: number): Float32Array {
  let state = 12345;
  return Float32Array.from({ length: n }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

/** Median ORT run time of each model, interleaved, 1 thread. */
async function runTimes(runs: number): Promise<Record<string, number>> {
  const fr = await ort.InferenceSession.create(modelPath('feature'), nativeEquivalentOptions(1, NATIVE_LEVELS.feature));
  const dlib = await ort.InferenceSession.create(secondModelFile(), nativeEquivalentOptions(1, 'all'));
  const inputs: [string, ort.InferenceSession, ort.Tensor][] = [
    ['fr_feature', fr, new ort.Tensor('float32', noise(3 * 112 * 112), [1, 3, 112, 112])],
    ['dlib', dlib, new ort.Tensor('float32', noise(3 * CHIP * CHIP), [1, 3, CHIP, CHIP])],
  ];
  const times: Record<string, number[]> = { fr_feature: [], dlib: [] };
  for (let i = 0; i < runs + 5; i++) {
    for (const [name, session, tensor] of inputs) {
      const t0 = performance.now();
      await session.run({ [session.inputNames[0]]: tensor });
      if (i >= 5) times[name].push(performance.now() - t0);
    }
  }
  await fr.release();
  await dlib.release();
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, +percentile(v, 50).toFixed(2)]));
}

async function main() {
  const data = requireSharedData('bench:fusion');
  const lfwDir = path.join(data, 'lfw-view1');
  const train = readPairs(lfwDir, 'pairsDevTrain.txt');
  const test = readPairs(lfwDir, 'pairsDevTest.txt');
  const names = [...new Set([...train, ...test].flatMap((p) => [p.a, p.b]))].sort();
  console.log(`bench:fusion — fr_feature and dlib's ResNet (${SECOND_MODEL_PACKAGE}) on ${names.length} LFW images`);
  const { fr, dlib } = await templates(lfwDir, names);
  const frScore: Scorer = (a, b) => cosine(fr.get(a)!, fr.get(b)!);
  const dlibScore: Scorer = (a, b) => cosine(dlib.get(a)!, dlib.get(b)!);
  const trainScores = (score: Scorer) => train.filter((p) => fr.has(p.a) && fr.has(p.b)).map((p) => score(p.a, p.b));
  const sdFr = standardDeviation(trainScores(frScore));
  const sdDlib = standardDeviation(trainScores(dlibScore));
  const fused = (w: number): Scorer => {
    const a = (1 - w) / sdFr, b = w / sdDlib;
    return (x, y) => (a * frScore(x, y) + b * dlibScore(x, y)) / (a + b);
  };
  // The fusion weight with the best DevTrain accuracy (the lowest such weight on a tie).
  let weight = 0, bestTrain = -1;
  for (let k = 0; k <= 20; k++) {
    const f = fused(k / 20);
    const scored = scorePairs(train, (a, b) => (fr.has(a) && fr.has(b) ? f(a, b) : null)).scored;
    const acc = accuracyAt(scored, bestThreshold(scored));
    if (acc > bestTrain) { bestTrain = acc; weight = k / 20; }
  }
  const results = [
    evaluate('fr_feature (engine)', frScore, fr, train, test),
    evaluate('dlib ResNet', dlibScore, dlib, train, test),
    evaluate(`fused, w=${weight} (DevTrain best)`, fused(weight), fr, train, test),
  ];
  const times = await runTimes(40);
  console.log(`\n${'templates'.padEnd(34)} ${'DevTrain'.padStart(9)} ${'DevTest'.padStart(8)}  TAR@1e-3  TAR@1e-4  TAR@1e-5  TAR@1e-6`);
  for (const r of results) {
    console.log(`${r.label.padEnd(34)} ${r.devTrainAccuracy.toFixed(2).padStart(8)}% ${r.devTestAccuracy.toFixed(2).padStart(7)}%` +
      `  ${String(r.tarAtFar['1e-3']).padStart(7)}%  ${String(r.tarAtFar['1e-4']).padStart(7)}%  ${String(r.tarAtFar['1e-5']).padStart(7)}%` +
      `  ${String(r.tarAtFar['1e-6']).padStart(7)}%`);
  }
  console.log(`\nORT run time, 1 thread, median: fr_feature ${times.fr_feature} ms, dlib ${times.dlib} ms ` +
    `(a fused engine adds the dlib run and a 150x150 warp to every analysis)`);
  printJsonLine({ bench: 'fusion', images: names.length, faces: fr.size, weight, sd: { fr: +sdFr.toFixed(4), dlib: +sdDlib.toFixed(4) },
    results, runTimeMs: times });
}

main().catch((err) => { console.error(err); process.exit(1); });
