// npm run bench:lfw — face verification accuracy on the LFW development view (../shared/data/lfw-view1):
// threshold chosen on DevTrain, accuracy reported on DevTest; TAR at FAR 1e-3 with the threshold taken
// from every impostor pair that can be formed across identities; genuine/impostor score distributions.
// Runs with and without flip-averaged templates, side by side.
import path from 'node:path';

import { cosine } from '../src/engine';
import { percentile, printJsonLine, requireSharedData } from './common';
import { identityOf, lfwTemplates, readPairs, type Pair, type TemplateSet } from './lfw-data';

interface Scored { score: number; same: boolean }

function scorePairs(pairs: Pair[], set: TemplateSet): { scored: Scored[]; missing: number } {
  const at = new Map(set.names.map((n, i) => [n, set.templates[i]]));
  let missing = 0;
  // A pair with an image where no face was found counts as a non-match (score -1): honest, not skipped.
  const scored = pairs.map((p) => {
    const a = at.get(p.a), b = at.get(p.b);
    if (!a || !b) { missing++; return { score: -1, same: p.same }; }
    return { score: cosine(a, b), same: p.same };
  });
  return { scored, missing };
}

function accuracyAt(scored: Scored[], t: number): number {
  return scored.filter((s) => (s.score >= t) === s.same).length / scored.length;
}

function bestThreshold(scored: Scored[]): number {
  const candidates = [...new Set(scored.map((s) => s.score))].sort((a, b) => a - b);
  let best = 0, bestAcc = -1;
  for (let i = 0; i < candidates.length; i++) {
    const t = i === 0 ? candidates[0] : (candidates[i - 1] + candidates[i]) / 2;
    const acc = accuracyAt(scored, t);
    if (acc > bestAcc) { bestAcc = acc; best = t; }
  }
  return best;
}

/** Every cross-identity impostor score among the templates (identity = the folder name, aliases folded). */
function allImpostorScores(set: TemplateSet): Float32Array {
  const items = set.names.map((n, i) => ({ id: identityOf(n), t: set.templates[i] })).filter((x) => x.t);
  const out: number[] = [];
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      if (items[i].id !== items[j].id) out.push(cosine(items[i].t!, items[j].t!));
    }
  }
  return Float32Array.from(out);
}

function thresholdAtFar(impostors: Float32Array, far: number): number {
  const sorted = Float32Array.from(impostors).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * (1 - far)))];
}

function distribution(values: number[]): Record<string, number> {
  const r: Record<string, number> = {};
  for (const p of [1, 5, 25, 50, 75, 95, 99]) r[`p${p}`] = +percentile(values, p).toFixed(4);
  return r;
}

async function evaluate(lfwDir: string, flipAverage: boolean) {
  const train = readPairs(lfwDir, 'pairsDevTrain.txt');
  const test = readPairs(lfwDir, 'pairsDevTest.txt');
  const names = [...new Set([...train, ...test].flatMap((p) => [p.a, p.b]))].sort();
  const started = Date.now();
  const set = await lfwTemplates(lfwDir, names, { flipAverage, tag: flipAverage ? 'flip' : 'noflip' });
  const seconds = (Date.now() - started) / 1000;
  const trainScored = scorePairs(train, set);
  const testScored = scorePairs(test, set);
  const threshold = bestThreshold(trainScored.scored);
  const impostors = allImpostorScores(set);
  const farThreshold = thresholdAtFar(impostors, 1e-3);
  const genuineTest = testScored.scored.filter((s) => s.same);
  return {
    flipAverage,
    images: names.length,
    noFace: set.templates.filter((t) => !t).length,
    templateSeconds: +seconds.toFixed(1),
    threshold: +threshold.toFixed(4),
    trainAccuracy: +accuracyAt(trainScored.scored, threshold).toFixed(4),
    testAccuracy: +accuracyAt(testScored.scored, threshold).toFixed(4),
    impostorPairs: impostors.length,
    thresholdFar1e3: +farThreshold.toFixed(4),
    tarAtFar1e3: +(genuineTest.filter((s) => s.score >= farThreshold).length / genuineTest.length).toFixed(4),
    genuine: distribution(genuineTest.map((s) => s.score)),
    impostor: distribution(Array.from(impostors)),
  };
}

async function main() {
  const data = requireSharedData('bench:lfw');
  const lfwDir = path.join(data, 'lfw-view1');
  const results = [];
  for (const flip of [true, false]) {
    const r = await evaluate(lfwDir, flip);
    results.push(r);
    console.log(`flipAverage=${flip}: DevTest accuracy ${(r.testAccuracy * 100).toFixed(2)}% at cosine ${r.threshold} ` +
      `(DevTrain ${(r.trainAccuracy * 100).toFixed(2)}%), TAR@FAR1e-3 ${(r.tarAtFar1e3 * 100).toFixed(2)}% ` +
      `(threshold ${r.thresholdFar1e3} over ${r.impostorPairs} impostor pairs), images without a face ${r.noFace}`);
    console.log(`  genuine ${JSON.stringify(r.genuine)}\n  impostor ${JSON.stringify(r.impostor)}`);
  }
  printJsonLine({ bench: 'lfw', results });
}

main().catch((e) => { console.error(e); process.exit(1); });
