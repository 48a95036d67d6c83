// npm run bench:lfw — face verification accuracy on the LFW development view (../shared/data/lfw-view1):
// threshold chosen on DevTrain, accuracy reported on DevTest; TAR at FAR 1e-3 with the threshold taken
// from every impostor pair that can be formed across identities; genuine/impostor score distributions.
// Runs with and without flip-averaged templates, side by side. With --precision: the float32 and the int8
// template networks instead (no flip-averaging), with TAR at FAR 1e-5 and 1e-6 too, against the int8 guard
// (DevTest accuracy within 0.1 point, TAR at FAR 1e-5 and 1e-6 within 0.5 point of float32).
import path from 'node:path';

import { defaultPrecision, type Precision } from '../src/engine/template-spec';
import { dot as cosine } from '../src/matching/dot';
import { percentile, printJsonLine, requireSharedData } from './common';
import { lfwTemplates, readPairs } from './lfw-data';
import { acceptRate, accuracyAt, bestThreshold, impostorScores, scorePairs, thresholdAtFar } from './lfw-scoring';

function distribution(values: number[]): Record<string, number> {
  const r: Record<string, number> = {};
  for (const p of [1, 5, 25, 50, 75, 95, 99]) r[`p${p}`] = +percentile(values, p).toFixed(4);
  return r;
}

async function evaluate(lfwDir: string, flipAverage: boolean, precision?: Precision) {
  const train = readPairs(lfwDir, 'pairsDevTrain.txt');
  const test = readPairs(lfwDir, 'pairsDevTest.txt');
  const names = [...new Set([...train, ...test].flatMap((p) => [p.a, p.b]))].sort();
  const started = Date.now();
  const set = await lfwTemplates(lfwDir, names, { flipAverage, tag: flipAverage ? 'flip' : 'noflip', precision });
  const seconds = (Date.now() - started) / 1000;
  const at = new Map(set.names.map((n, i) => [n, set.templates[i]]));
  const score = (a: string, b: string) => {
    const x = at.get(a), y = at.get(b);
    return x && y ? cosine(x, y) : null;
  };
  const trainScored = scorePairs(train, score);
  const testScored = scorePairs(test, score);
  const genuineTest = testScored.scored.filter((s) => s.same);
  const threshold = bestThreshold(trainScored.scored);
  const impostors = impostorScores(set.names.filter((n) => at.get(n)), (a, b) => score(a, b)!);
  const farThreshold = thresholdAtFar(impostors, 1e-3);
  const tarAt = (far: number) => +acceptRate(genuineTest.map((s) => s.score), thresholdAtFar(impostors, far)).toFixed(4);
  // The DevTest pairs decided wrongly at the DevTrain threshold, so each error can be looked at.
  const errors = test.flatMap((p, i) => {
    const s = testScored.scored[i].score;
    return (s >= threshold) === p.same ? [] : [{ kind: p.same ? 'false non-match' : 'false match', a: p.a, b: p.b, score: +s.toFixed(4) }];
  });
  return {
    flipAverage,
    precision: precision ?? defaultPrecision(),
    images: names.length,
    noFace: set.templates.filter((t) => !t).length,
    templateSeconds: +seconds.toFixed(1),
    threshold: +threshold.toFixed(4),
    trainAccuracy: +accuracyAt(trainScored.scored, threshold).toFixed(4),
    testAccuracy: +accuracyAt(testScored.scored, threshold).toFixed(4),
    impostorPairs: impostors.length,
    thresholdFar1e3: +farThreshold.toFixed(4),
    tarAtFar1e3: +acceptRate(genuineTest.map((s) => s.score), farThreshold).toFixed(4),
    tarAtFar1e4: tarAt(1e-4), tarAtFar1e5: tarAt(1e-5), tarAtFar1e6: tarAt(1e-6),
    genuine: distribution(genuineTest.map((s) => s.score)),
    impostor: distribution(Array.from(impostors)),
    errors,
  };
}

/** float32 against int8 template networks, and the int8 guard. */
async function comparePrecisions(lfwDir: string) {
  const [f, q] = [await evaluate(lfwDir, false, 'float32'), await evaluate(lfwDir, false, 'int8')];
  const points = (v: number) => +(v * 100).toFixed(2);
  console.log('                 float32   int8     difference (points)');
  const keys = ['testAccuracy', 'tarAtFar1e3', 'tarAtFar1e4', 'tarAtFar1e5', 'tarAtFar1e6'] as const;
  for (const k of keys) console.log(`${k.padEnd(15)} ${points(f[k]).toFixed(2).padStart(7)}  ${points(q[k]).toFixed(2).padStart(7)}  ${(points(q[k]) - points(f[k])).toFixed(2).padStart(7)}`);
  console.log(`DevTest errors: float32 ${f.errors.length}, int8 ${q.errors.length}; images without a face: ${f.noFace}, ${q.noFace}`);
  const guard = {
    accuracy: f.testAccuracy - q.testAccuracy <= 0.001 + 1e-9,
    tarAtFar1e5: f.tarAtFar1e5 - q.tarAtFar1e5 <= 0.005 + 1e-9,
    tarAtFar1e6: f.tarAtFar1e6 - q.tarAtFar1e6 <= 0.005 + 1e-9,
  };
  const held = Object.values(guard).every(Boolean);
  console.log(`int8 guard (accuracy within 0.1 point, TAR at FAR 1e-5 and 1e-6 within 0.5 point): ${held ? 'HELD' : 'FAILED'} ${JSON.stringify(guard)}`);
  const brief = (r: typeof f) => ({ ...r, errors: r.errors.length });
  printJsonLine({ bench: 'lfw-precision', float32: brief(f), int8: brief(q), guard, held });
}

async function main() {
  const data = requireSharedData('bench:lfw');
  const lfwDir = path.join(data, 'lfw-view1');
  if (process.argv.includes('--precision')) return comparePrecisions(lfwDir);
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
