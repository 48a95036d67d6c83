// npm run bench:calibration — calibrates the similarity scale (cosine -> percent) on LFW so every percent
// threshold has a measured false-match rate: FMR 1e-k maps to 80 + 9(k - 4) percent (1e-4 -> 80 %,
// 1e-6 -> 98 %), from every impostor pair that can be formed across identities of the development view.
// Prints the table threshold -> FMR / FNMR, checks the anchors on a split (calibrate on DevTrain images,
// measure on DevTest images), and with --write stores the anchors in models/similarity-scale.json.
import fs from 'node:fs';
import path from 'node:path';

import { dot as cosine } from '../src/matching/dot';
import { SimilarityScale, type Anchor } from '../src/matching/similarity-scale';
import { packageRoot } from '../src/package-root';
import { printJsonLine, requireSharedData } from './common';
import { identityOf, lfwTemplates, readPairs, type TemplateSet } from './lfw-data';

const FMR_LEVELS = [1, 2, 3, 4, 5, 6];           // 1e-1 .. 1e-6
const percentAt = (k: number) => 80 + 9 * (k - 4); // 53, 62, 71, 80, 89, 98
// Each anchor sits where the measured FMR is at most its target (1e-6 is 12 of 12.4 million pairs); the
// held-out column shows how anchors fitted on DevTrain images hold on the other images.
const SAFETY = 1;

interface Item { id: string; t: Float32Array }

function items(set: TemplateSet, filter?: Set<string>): Item[] {
  return set.names.map((n, i) => ({ name: n, id: identityOf(n), t: set.templates[i] }))
    .filter((x) => x.t && (!filter || filter.has(x.name))).map((x) => ({ id: x.id, t: x.t! }));
}

function pairScores(list: Item[]): { impostor: Float32Array; genuine: Float32Array } {
  const imp: number[] = [], gen: number[] = [];
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) (list[i].id === list[j].id ? gen : imp).push(cosine(list[i].t, list[j].t));
  }
  return { impostor: Float32Array.from(imp).sort().reverse(), genuine: Float32Array.from(gen) };
}

/** The cosine above which `rate` of the (descending) impostor scores lie. */
function thresholdAt(descending: Float32Array, rate: number): number {
  const k = Math.floor(descending.length * rate);
  return k < 1 ? descending[0] + 1e-6 : descending[k - 1] + 1e-6;
}

const rateAbove = (scores: Float32Array, t: number) => scores.reduce((n, s) => n + (s >= t ? 1 : 0), 0) / scores.length;

function anchorsFrom(impostorDesc: Float32Array): Anchor[] {
  const anchors: Anchor[] = [{ cosine: -1, similarity: 0 }];
  // Rounded up to 4 decimals: rounding down would let more impostors over the anchor than its FMR allows.
  for (const k of FMR_LEVELS) anchors.push({ cosine: Math.ceil(thresholdAt(impostorDesc, 10 ** -k / SAFETY) * 1e4) / 1e4, similarity: percentAt(k) });
  anchors.push({ cosine: 1, similarity: 100 });
  return anchors;
}

async function main() {
  const data = requireSharedData('bench:calibration');
  const lfwDir = path.join(data, 'lfw-view1');
  const train = readPairs(lfwDir, 'pairsDevTrain.txt');
  const test = readPairs(lfwDir, 'pairsDevTest.txt');
  const trainNames = new Set(train.flatMap((p) => [p.a, p.b]));
  const testNames = new Set(test.flatMap((p) => [p.a, p.b]));
  const names = [...new Set([...trainNames, ...testNames])].sort();
  // The engine's default templates (no flip-averaging: native/core/face/face_engine.h).
  const set = await lfwTemplates(lfwDir, names, { flipAverage: false, tag: 'noflip' });

  // Calibration: all images of the development view.
  const all = pairScores(items(set));
  const anchors = anchorsFrom(all.impostor);
  const scale = new SimilarityScale(anchors);

  // FNMR on the DevTest genuine pairs of the protocol.
  const at = new Map(set.names.map((n, i) => [n, set.templates[i]]));
  const devTestGenuine = Float32Array.from(test.filter((p) => p.same)
    .map((p) => (at.get(p.a) && at.get(p.b) ? cosine(at.get(p.a)!, at.get(p.b)!) : -1)));

  // Split check: anchors from DevTrain images only, FMR measured on pairs of images outside DevTrain.
  const trainOnly = anchorsFrom(pairScores(items(set, trainNames)).impostor);
  const heldOut = pairScores(items(set, new Set(names.filter((n) => !trainNames.has(n)))));

  console.log(`LFW development view: ${names.length} images, ${all.impostor.length} impostor pairs, ` +
    `${all.genuine.length} genuine pairs (all same-identity pairs), ${devTestGenuine.length} DevTest genuine pairs`);
  console.log('similarity %  cosine   FMR (all pairs)  FNMR (DevTest)  FNMR (all genuine)  held-out FMR (DevTrain anchors)');
  const table = [];
  for (const k of FMR_LEVELS) {
    const pct = percentAt(k);
    const c = scale.toCosineFloor(pct);
    const row = {
      similarity: pct, cosine: +c.toFixed(4), targetFmr: 10 ** -k,
      fmr: rateAbove(all.impostor, c), fnmrDevTest: 1 - rateAbove(devTestGenuine, c), fnmrAll: 1 - rateAbove(all.genuine, c),
      heldOutFmr: rateAbove(heldOut.impostor, new SimilarityScale(trainOnly).toCosineFloor(pct)), heldOutPairs: heldOut.impostor.length,
    };
    table.push(row);
    console.log(`${String(pct).padStart(11)}  ${row.cosine.toFixed(4).padStart(7)}  ${row.fmr.toExponential(2).padStart(15)}  ` +
      `${(row.fnmrDevTest * 100).toFixed(2).padStart(13)}%  ${(row.fnmrAll * 100).toFixed(2).padStart(17)}%  ${row.heldOutFmr.toExponential(2).padStart(12)}`);
  }
  const ok80 = table[3].fmr <= 1e-4, ok98 = table[5].fmr <= 1e-6;
  console.log(`80% -> FMR ${table[3].fmr.toExponential(2)} (${ok80 ? 'meets' : 'MISSES'} <= 1e-4); ` +
    `98% -> FMR ${table[5].fmr.toExponential(2)} (${ok98 ? 'meets' : 'MISSES'} <= 1e-6)`);
  if (process.argv.includes('--write')) {
    const file = path.join(packageRoot(), 'models', 'similarity-scale.json');
    fs.writeFileSync(file, JSON.stringify({
      $comment: 'Written by `npm run bench:calibration -- --write`: cosine -> similarity percent anchors. FMR 1e-k maps to 80 + 9(k-4) percent, measured on all LFW development-view impostor pairs (name aliases folded).',
      anchors, calibratedOn: { images: names.length, impostorPairs: all.impostor.length, flipAverage: false }, table,
    }, null, 2) + '\n');
    console.log(`wrote ${file}`);
  }
  printJsonLine({ bench: 'calibration', anchors, table, meets: { fmr80: ok80, fmr98: ok98 } });
}

main().catch((e) => { console.error(e); process.exit(1); });
