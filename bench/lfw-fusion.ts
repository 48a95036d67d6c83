// npm run bench:fusion — where the template's weights come from. The engine's template joins two embedding
// networks, fr_feature and MobileFaceNet (models/manifest.json `template`); on the LFW development view
// (../shared/data/lfw-view1) this measures each network alone, their fusion at every weight on a 0.05 grid,
// and, for comparison, dlib's public-domain ResNet (bench/second-model.ts) alone and fused with fr_feature.
// Everything is chosen on DevTrain (the weight: best DevTrain accuracy, the lowest such weight on a tie;
// each score's scale: its DevTrain standard deviation; the thresholds) and reported on DevTest, plus TAR at
// FAR 1e-3 .. 1e-6 over every cross-identity impostor pair, and each network's ORT run time (1 thread).
//
// Fusion: s = (a * cos_1 + b * cos_2) / (a + b) with a = (1 - w) / sd_1, b = w / sd_2. That is exactly the
// cosine of the concatenated templates [sqrt(a) e_1, sqrt(b) e_2] / sqrt(a + b): the engine's template,
// with weights a / (a + b) and b / (a + b), which this prints for the manifest.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { createEngine } from '../src/engine';
import { dot as cosine } from '../src/matching/dot';
import { templateNetworks } from '../src/engine/template-spec';
import { packageRoot } from '../src/package-root';
import { modelPath, nativeEquivalentOptions, NATIVE_LEVELS } from './baseline-pipeline';
import { loadRgb, mapLimit, outDir, percentile, printJsonLine, requireSharedData } from './common';
import { centralFace, lfwTemplates, readPairs, type Pair } from './lfw-data';
import { acceptRate, accuracyAt, bestThreshold, impostorScores, scorePairs, thresholdAtFar } from './lfw-scoring';
import { CHIP, dlibChip, secondModelFile, SECOND_MODEL_PACKAGE } from './second-model';

type Templates = Map<string, Float32Array>;
type Scorer = (a: string, b: string) => number;

const l2 = (v: Float32Array) => {
  let s = 0;
  for (const x of v) s += x * x;
  const inv = 1 / Math.sqrt(s);
  return v.map((x) => x * inv);
};

const NETWORKS = templateNetworks();  // fr_feature, then MobileFaceNet
const TEMPLATE_WEIGHTS = NETWORKS.map((n) => n.weight);

/** Each network's own unit-length embedding, out of the engine's templates (weighted parts, fr_feature first). */
async function networkEmbeddings(lfwDir: string, names: string[]): Promise<{ fr: Templates; mfn: Templates }> {
  const set = await lfwTemplates(lfwDir, names, { flipAverage: false, tag: 'noflip' });
  const fr: Templates = new Map(), mfn: Templates = new Map();
  set.names.forEach((name, i) => {
    const t = set.templates[i];
    if (!t) return;
    fr.set(name, l2(t.subarray(0, NETWORKS[0].size)));
    mfn.set(name, l2(t.subarray(NETWORKS[0].size)));
  });
  return { fr, mfn };
}

/** dlib descriptors (L2-normalised) of every image, on the engine's landmarks, cached in bench/out. */
async function dlibDescriptors(lfwDir: string, names: string[]): Promise<Templates> {
  const cacheFile = path.join(outDir(), 'lfw-dlib-descriptors.json');
  const cached = fs.existsSync(cacheFile) ? JSON.parse(fs.readFileSync(cacheFile, 'utf8')) as Record<string, number[] | null> : null;
  let record: Record<string, number[] | null> = cached && names.every((n) => n in cached) ? cached : {};
  if (!Object.keys(record).length) {
    const engine = await createEngine({});
    const session = await ort.InferenceSession.create(secondModelFile(), nativeEquivalentOptions(1, 'all'));
    record = {};
    let done = 0;
    await mapLimit(names, 2, async (name) => {
      const image = await loadRgb(path.join(lfwDir, 'images', name));
      const face = centralFace(await engine.analyze(image, { maxFaces: 8, embed: false, eyes: false, liveness: false }), image.width, image.height);
      if (face) {
        const input = new ort.Tensor('float32', dlibChip(image, face.landmarks), [1, 3, CHIP, CHIP]);
        record[name] = Array.from(l2((await session.run({ input })).descriptor.data as Float32Array));
      } else {
        record[name] = null;
      }
      if (++done % 500 === 0) process.stderr.write(`  dlib ${done}/${names.length} images\n`);
    });
    await session.release();
    await engine.close();
    fs.writeFileSync(cacheFile, JSON.stringify(record));
  }
  const out: Templates = new Map();
  for (const [name, d] of Object.entries(record)) if (d) out.set(name, Float32Array.from(d));
  return out;
}

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

/** Score fusion of two networks, each cosine scaled by its DevTrain spread, and the weight chosen on DevTrain. */
function fusion(first: Templates, second: Templates, train: Pair[]) {
  const s1: Scorer = (a, b) => cosine(first.get(a)!, first.get(b)!);
  const s2: Scorer = (a, b) => cosine(second.get(a)!, second.get(b)!);
  const trainScores = (score: Scorer) => train.filter((p) => first.has(p.a) && first.has(p.b) && second.has(p.a) && second.has(p.b))
    .map((p) => score(p.a, p.b));
  const sd1 = standardDeviation(trainScores(s1)), sd2 = standardDeviation(trainScores(s2));
  const fused = (w: number): Scorer => {
    const a = (1 - w) / sd1, b = w / sd2;
    return (x, y) => (a * s1(x, y) + b * s2(x, y)) / (a + b);
  };
  const sweep: { weight: number; devTrainAccuracy: number }[] = [];
  let weight = 0, best = -1;
  for (let k = 0; k <= 20; k++) {
    const f = fused(k / 20);
    const scored = scorePairs(train, (x, y) => (first.has(x) && first.has(y) && second.has(x) && second.has(y) ? f(x, y) : null)).scored;
    const acc = accuracyAt(scored, bestThreshold(scored));
    sweep.push({ weight: k / 20, devTrainAccuracy: +(100 * acc).toFixed(2) });
    if (acc > best) { best = acc; weight = k / 20; }
  }
  const a = (1 - weight) / sd1, b = weight / sd2;
  return { weight, sd: [+sd1.toFixed(4), +sd2.toFixed(4)], templateWeights: [+(a / (a + b)).toFixed(4), +(b / (a + b)).toFixed(4)], score: fused(weight), sweep };
}

/** Uniform [-1, 1) noise, seeded: a constant input runs faster than a real face; noise runs like one. */
function noise(n: number): Float32Array {
  let state = 12345;
  return Float32Array.from({ length: n }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

/** Median ORT run time of each network, interleaved, 1 thread. */
async function runTimes(runs: number): Promise<Record<string, number>> {
  const networks: [string, ort.InferenceSession, ort.Tensor][] = [
    ['fr_feature', await ort.InferenceSession.create(modelPath('feature'), nativeEquivalentOptions(1, NATIVE_LEVELS.feature)),
      new ort.Tensor('float32', noise(3 * 112 * 112), [1, 3, 112, 112])],
    ['mobilefacenet', await ort.InferenceSession.create(path.join(packageRoot(), 'models', 'mobilefacenet.onnx'), nativeEquivalentOptions(1, 'all')),
      new ort.Tensor('float32', noise(3 * 112 * 112), [1, 3, 112, 112])],
    ['dlib', await ort.InferenceSession.create(secondModelFile(), nativeEquivalentOptions(1, 'all')),
      new ort.Tensor('float32', noise(3 * CHIP * CHIP), [1, 3, CHIP, CHIP])],
  ];
  const times: Record<string, number[]> = Object.fromEntries(networks.map(([name]) => [name, []]));
  for (let i = 0; i < runs + 5; i++) {
    for (const [name, session, tensor] of networks) {
      const t0 = performance.now();
      await session.run({ [session.inputNames[0]]: tensor });
      if (i >= 5) times[name].push(performance.now() - t0);
    }
  }
  for (const [, session] of networks) await session.release();
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, +percentile(v, 50).toFixed(2)]));
}

async function main() {
  const data = requireSharedData('bench:fusion');
  const lfwDir = path.join(data, 'lfw-view1');
  const train = readPairs(lfwDir, 'pairsDevTrain.txt');
  const test = readPairs(lfwDir, 'pairsDevTest.txt');
  const names = [...new Set([...train, ...test].flatMap((p) => [p.a, p.b]))].sort();
  console.log(`bench:fusion — fr_feature, MobileFaceNet and dlib's ResNet (${SECOND_MODEL_PACKAGE}) on ${names.length} LFW images`);
  const { fr, mfn } = await networkEmbeddings(lfwDir, names);
  const dlib = await dlibDescriptors(lfwDir, names);
  const single = (t: Templates): Scorer => (a, b) => cosine(t.get(a)!, t.get(b)!);
  const withMfn = fusion(fr, mfn, train);
  const withDlib = fusion(fr, dlib, train);
  const results = [
    evaluate('fr_feature alone', single(fr), fr, train, test),
    evaluate('MobileFaceNet alone', single(mfn), mfn, train, test),
    evaluate('dlib ResNet alone', single(dlib), dlib, train, test),
    evaluate(`fr_feature + MobileFaceNet, w=${withMfn.weight}`, withMfn.score, fr, train, test),
    evaluate(`fr_feature + dlib, w=${withDlib.weight}`, withDlib.score, fr, train, test),
  ];
  const times = await runTimes(40);
  console.log(`\nfr_feature + MobileFaceNet, DevTrain accuracy by weight on MobileFaceNet: ` +
    withMfn.sweep.map((s) => `${s.weight.toFixed(2)}:${s.devTrainAccuracy.toFixed(2)}`).join(' '));
  console.log(`\n${'templates'.padEnd(36)} ${'DevTrain'.padStart(9)} ${'DevTest'.padStart(8)}  TAR@1e-3  TAR@1e-4  TAR@1e-5  TAR@1e-6`);
  for (const r of results) {
    console.log(`${r.label.padEnd(36)} ${r.devTrainAccuracy.toFixed(2).padStart(8)}% ${r.devTestAccuracy.toFixed(2).padStart(7)}%` +
      `  ${String(r.tarAtFar['1e-3']).padStart(7)}%  ${String(r.tarAtFar['1e-4']).padStart(7)}%  ${String(r.tarAtFar['1e-5']).padStart(7)}%` +
      `  ${String(r.tarAtFar['1e-6']).padStart(7)}%`);
  }
  const matches = withMfn.templateWeights.every((w, i) => Math.abs(w - TEMPLATE_WEIGHTS[i]) < 5e-4);
  console.log(`\ntemplate weights from DevTrain: fr_feature ${withMfn.templateWeights[0]}, MobileFaceNet ${withMfn.templateWeights[1]} ` +
    `(sd ${withMfn.sd.join(', ')}); models/manifest.json has ${TEMPLATE_WEIGHTS.join(', ')}: ${matches ? 'the same' : 'DIFFERENT'}`);
  console.log(`ORT run time, 1 thread, median: ${Object.entries(times).map(([k, v]) => `${k} ${v} ms`).join(', ')}`);
  printJsonLine({
    bench: 'fusion', images: names.length, faces: fr.size,
    mobilefacenet: { weight: withMfn.weight, sd: withMfn.sd, templateWeights: withMfn.templateWeights, manifestMatches: matches, sweep: withMfn.sweep },
    dlib: { weight: withDlib.weight, sd: withDlib.sd },
    results, runTimeMs: times,
  });
}

main().catch((err) => { console.error(err); process.exit(1); });
