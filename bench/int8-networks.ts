// npm run bench:int8-networks — accuracy of the int8 forms of the detector, landmark and liveness networks
// (bench/int8-forms.ts) against float32, on photos the calibration never saw. The same pipeline
// (bench/baseline-pipeline.ts, the engine's steps in TypeScript) runs with the float32 files and with one
// network's int8 form, so any difference is that network's.
// - detector and landmarks (each form of bench/int8-forms.ts): LFW DevTest images (BENCH_INT8_IMAGES, default 400, evenly spaced) and every photo
//   of ../shared/data/identities (larger photos, several faces). Per photo the faces of both runs are
//   matched by box IoU; reported: photos whose face count differs, the boxes' IoU, the landmarks' mean
//   distance over the face width and the cosine of the two templates (the template made from an int8
//   detection against the float32 one).
// - liveness: ../shared/data/pad (none of it calibrates: it has no training split): the colour score's
//   difference, and BPCER / APCER per attack kind at the committed threshold (config colour_only_threshold).
// Speed: bench:engine --precision. Ends with one JSON line.
import fs from 'node:fs';
import path from 'node:path';

import { defaultConfig } from '../src/config/load';
import { dot as cosine } from '../src/matching/dot';
import { createBaseline, type BaselineFace, type BaselinePipeline } from './baseline-pipeline';
import { loadRgb, printJsonLine, requireSharedData } from './common';
import { INT8_FORMS, int8FormBytes, type Int8Form } from './int8-forms';
import { readPairs } from './lfw-data';

const IMAGES = Math.max(10, Number(process.env.BENCH_INT8_IMAGES ?? 400));
const THRESHOLD = defaultConfig().liveness.colour_only_threshold;
const round = (v: number, d = 4) => (Number.isFinite(v) ? +v.toFixed(d) : v);

function pipelineFor(form: Int8Form): Promise<BaselinePipeline> {
  return createBaseline({ threads: 1, files: { [form.id]: int8FormBytes(form) } });
}

function iou(a: BaselineFace['box'], b: BaselineFace['box']): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return w <= 0 || h <= 0 ? 0 : (w * h) / (a.width * a.height + b.width * b.height - w * h);
}

interface Agreement {
  photos: number; facesFloat32: number; facesInt8: number; photosCountDiffers: number; unmatched: number;
  iouMin: number; iouMean: number; iouBelow095: number; landmarkMaxOverWidth: number; landmarkMeanOverWidth: number;
  cosineMin: number; cosineMean: number;
}

/** Faces of the float32 and the int8 run of each photo, matched by box IoU. */
function agreement(runs: { float32: BaselineFace[]; int8: BaselineFace[] }[]): Agreement {
  const ious: number[] = [], landmarks: number[] = [], cosines: number[] = [];
  let countDiffers = 0, unmatched = 0, facesFloat32 = 0, facesInt8 = 0;
  for (const { float32, int8 } of runs) {
    facesFloat32 += float32.length; facesInt8 += int8.length;
    if (float32.length !== int8.length) countDiffers++;
    for (const f of float32) {
      let best: BaselineFace | undefined, bestIou = 0;
      for (const q of int8) { const v = iou(f.box, q.box); if (v > bestIou) { bestIou = v; best = q; } }
      if (!best || bestIou < 0.5) { unmatched++; continue; }
      ious.push(bestIou);
      let d = 0;
      for (let i = 0; i < 68; i++) d += Math.hypot(f.landmarks[2 * i] - best.landmarks[2 * i], f.landmarks[2 * i + 1] - best.landmarks[2 * i + 1]) / 68;
      landmarks.push(d / f.box.width);
      cosines.push(cosine(f.embedding, best.embedding));
    }
  }
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  return {
    photos: runs.length, facesFloat32, facesInt8, photosCountDiffers: countDiffers, unmatched,
    iouMin: round(Math.min(...ious)), iouMean: round(mean(ious)), iouBelow095: ious.filter((v) => v < 0.95).length,
    landmarkMaxOverWidth: round(Math.max(...landmarks)), landmarkMeanOverWidth: round(mean(landmarks)),
    cosineMin: round(Math.min(...cosines)), cosineMean: round(mean(cosines), 5),
  };
}

/** DevTest images evenly spaced, then every identities photo. */
function facePhotos(data: string): string[] {
  const lfw = path.join(data, 'lfw-view1');
  const names = [...new Set(readPairs(lfw, 'pairsDevTest.txt').flatMap((p) => [p.a, p.b]))].sort();
  const step = names.length / Math.min(IMAGES, names.length);
  const devTest = Array.from({ length: Math.min(IMAGES, names.length) }, (_, i) => path.join(lfw, 'images', names[Math.floor(i * step)]));
  const identities = fs.readFileSync(path.join(data, 'identities', 'identities.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => path.join(data, 'identities', l.split(',')[0]));
  return [...devTest, ...identities];
}

interface PadScores { label: string; float32: number; int8: number }

function padErrors(scores: PadScores[], key: 'float32' | 'int8'): Record<string, number> {
  const rate = (label: string, pass: (s: number) => boolean) => {
    const of = scores.filter((s) => s.label === label);
    return round(of.filter((s) => pass(s[key])).length / of.length);
  };
  return {
    bpcer: rate('real', (s) => s < THRESHOLD),
    apcerPrint: rate('attack-print', (s) => s >= THRESHOLD),
    apcerReplay: rate('attack-replay', (s) => s >= THRESHOLD),
  };
}

async function main(): Promise<void> {
  const data = requireSharedData('int8-networks');
  const float32 = await createBaseline({ threads: 1 });
  const result: Record<string, unknown> = { bench: 'int8-networks', devTestImages: IMAGES, threshold: THRESHOLD };

  const photos = facePhotos(data);
  for (const form of INT8_FORMS.filter((f) => f.id !== 'liveness')) {
    const int8 = await pipelineFor(form);
    const runs: { float32: BaselineFace[]; int8: BaselineFace[] }[] = [];
    for (const file of photos) {
      const image = await loadRgb(file);
      runs.push({ float32: (await float32.analyze(image)).faces, int8: (await int8.analyze(image)).faces });
    }
    await int8.close();
    const a = agreement(runs);
    result[form.name] = a;
    console.log(`${form.name} int8 vs float32 on ${a.photos} photos (${IMAGES} LFW DevTest + identities): faces ${a.facesFloat32} / ${a.facesInt8}, ` +
      `photos with another face count ${a.photosCountDiffers}, unmatched ${a.unmatched}; box IoU min ${a.iouMin} mean ${a.iouMean} ` +
      `(${a.iouBelow095} below 0.95); landmarks / face width max ${a.landmarkMaxOverWidth} mean ${a.landmarkMeanOverWidth}; ` +
      `template cosine min ${a.cosineMin} mean ${a.cosineMean}`);
  }

  const rows = fs.readFileSync(path.join(data, 'pad', 'index.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => { const [file, label] = l.split(','); return { file, label }; });
  const int8 = await pipelineFor(INT8_FORMS.find((f) => f.id === 'liveness')!);
  const scores: PadScores[] = [];
  let notAcquired = 0;
  for (const r of rows) {
    const image = await loadRgb(path.join(data, 'pad', r.file));
    const [f] = (await float32.analyze(image)).faces, [q] = (await int8.analyze(image)).faces;
    if (!f || !q) { notAcquired++; continue; }
    scores.push({ label: r.label, float32: f.liveness, int8: q.liveness });
  }
  await int8.close();
  await float32.close();
  const diffs = scores.map((s) => Math.abs(s.float32 - s.int8));
  const liveness = {
    photos: rows.length, scored: scores.length, notAcquired,
    scoreDiffMax: round(Math.max(...diffs)), scoreDiffMean: round(diffs.reduce((a, b) => a + b, 0) / diffs.length, 5),
    decisionsFlipped: scores.filter((s) => (s.float32 >= THRESHOLD) !== (s.int8 >= THRESHOLD)).length,
    float32: padErrors(scores, 'float32'), int8: padErrors(scores, 'int8'),
  };
  result.liveness = liveness;
  console.log(`liveness int8 vs float32 on ${liveness.scored} pad photos: score |diff| max ${liveness.scoreDiffMax} mean ${liveness.scoreDiffMean}, ` +
    `${liveness.decisionsFlipped} decisions flipped at ${THRESHOLD}; float32 ${JSON.stringify(liveness.float32)}, int8 ${JSON.stringify(liveness.int8)}`);
  printJsonLine(result);
}

main().catch((e) => { console.error(e); process.exit(1); });
