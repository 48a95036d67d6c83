// npm run bench:lfw — face verification accuracy on the LFW development view (../shared/data/lfw-view1):
// threshold chosen on DevTrain, accuracy reported on DevTest; TAR at FAR 1e-3 with the threshold taken
// from every impostor pair that can be formed across identities; genuine/impostor score distributions.
// Runs with and without flip-averaged templates, side by side.
import path from 'node:path';

import { dot as cosine } from '../src/matching/dot';
import { percentile, printJsonLine, requireSharedData } from './common';
import { lfwTemplates, readPairs } from './lfw-data';
import { acceptRate, accuracyAt, bestThreshold, impostorScores, scorePairs, thresholdAtFar } from './lfw-scoring';

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
  const at = new Map(set.names.map((n, i) => [n, set.templates[i]]));
  const score = (a: string, b: string) => {
    const x = at.get(a), y = at.get(b);
    return x && y ? cosine(x, y) : null;
  };
  const trainScored = scorePairs(train, score);
  const testScored = scorePairs(test, score);
  const threshold = bestThreshold(trainScored.scored);
  const impostors = impostorScores(set.names.filter((n) => at.get(n)), (a, b) => score(a, b)!);
  const farThreshold = thresholdAtFar(impostors, 1e-3);
  const genuineTest = testScored.scored.filter((s) => s.same);
  // The DevTest pairs decided wrongly at the DevTrain threshold, so each error can be looked at.
  const errors = test.flatMap((p, i) => {
    const s = testScored.scored[i].score;
    return (s >= threshold) === p.same ? [] : [{ kind: p.same ? 'false non-match' : 'false match', a: p.a, b: p.b, score: +s.toFixed(4) }];
  });
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
    tarAtFar1e3: +acceptRate(genuineTest.map((s) => s.score), farThreshold).toFixed(4),
    genuine: distribution(genuineTest.map((s) => s.score)),
    impostor: distribution(Array.from(impostors)),
    errors,
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
    console.log(`  ${r.errors.length} DevTest errors at the DevTrain threshold:`);
    for (const e of r.errors) console.log(`    ${e.kind.padEnd(15)} ${e.score.toFixed(3).padStart(6)}  ${e.a}  ${e.b}`);
  }
  printJsonLine({ bench: 'lfw', results });
}

main().catch((e) => { console.error(e); process.exit(1); });
