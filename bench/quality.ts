// npm run bench:quality — the enrolment checks (F_001-F_011) on real photos of ../shared/data and on
// variants generated from them (darker, overexposed, blurred, rotated, downscaled, two faces side by side).
// For every check: the measured value's range on good and bad photos and how many of each pass and fail at
// the default bounds ([quality] of the ini); then which code the whole ordered chain answers for each set.
// Also compares the pose model with a landmark-based estimate on mirrored and rotated photos.
// No-face diagnosis: photos made so dark (x0.12), blurred (sigma 7) or rolled (50 degrees) that the detector
// may miss the face, sent as JPEG like an upload; the chain's code without and with the diagnosis, side by
// side. Its image bounds were chosen on a sample of LFW (printed as the tuning set) and are judged on the
// other photos: the identities, the face-api crops and a disjoint LFW sample. The blur's sigma is 7 px on
// a face of LFW's median size, scaled to each photo's face. The order of roll and the image-quality checks
// was chosen on a fourth LFW sample (the order sample), against the order with image quality first.
// Headline share per degraded set: own code over the photos whose undegraded original passes every check,
// printed beside the share over all photos, with the excluded originals and their codes.
import fs from 'node:fs';
import path from 'node:path';
import sharp, { type Sharp } from 'sharp';

import { defaultConfig } from '../src/config/load';
import { createEngine } from '../src/engine';
import type { FaceAnalysis, FaceEngine, RgbImage } from '../src/engine/types';
import { ENROLMENT_CHECKS, runEnrolmentChecks } from '../src/services/enrolment-checks';
import { detectorOf, diagnoseNoFace, measureImage, type ImageMeasures } from '../src/services/no-face-diagnosis';
import { recheckRoll, ROLL_SENSITIVE } from '../src/services/roll-recheck';
import { loadRgb, printJsonLine, requireSharedData } from './common';
import { poseModel } from './pose-model';

type Transform = (img: RgbImage, face: FaceAnalysis) => Promise<RgbImage>;

const raw = (img: RgbImage) => sharp(Buffer.from(img.data), { raw: { width: img.width, height: img.height, channels: 3 } });
async function toRgb(s: Sharp): Promise<RgbImage> {
  const { data, info } = await s.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

/** Variants of a good photo that must fail one check each; `face` is the photo's analysed face. */
const VARIANTS: Record<string, { check: string; make: Transform }> = {
  darker: { check: 'BadBrightness', make: (img) => toRgb(raw(img).linear(0.3, 0)) },
  overexposed: { check: 'BadBrightness', make: (img) => toRgb(raw(img).linear(1.6, 90)) },
  blurred: { check: 'BadSharpness', make: (img, f) => toRgb(raw(img).blur(Math.max(1, f.faceSize / 40))) },
  rotated: { check: 'WrongFaceRoll', make: (img) => toRgb(raw(img).rotate(35, { background: '#808080' })) },
  downscaled: {
    check: 'WrongFaceSize',
    make: (img, f) => { const k = 50 / f.faceSize; return toRgb(raw(img).resize(Math.max(8, Math.round(img.width * k)))); },
  },
  twoFaces: {
    check: 'NotOneFace',
    make: async (img) => toRgb(sharp({ create: { width: img.width * 2, height: img.height, channels: 3, background: '#808080' } })
      .composite([{ input: await raw(img).png().toBuffer(), left: 0, top: 0 }, { input: await raw(img).flop().png().toBuffer(), left: img.width, top: 0 }])),
  },
};

/** Rows of quality/index.csv that must fail one check. */
const BAD_CONDITIONS: Record<string, string> = {
  closed_eyes: 'EyesClosed', open_mouth: 'MouthOpen', sunglasses: 'SunglassesExist', dark_lowkey: 'BadBrightness',
  pose_non_frontal: 'WrongFaceYaw', multi_face: 'NotOneFace', no_face: 'NoFace', low_resolution: 'WrongFaceSize',
};

/** The median face size (px) of the tuning LFW sample, on which the blur of sigma 7 was chosen. */
const LFW_FACE = 132;
/** Degradations that can hide the face from the detector; each must get its own code, not F_002.
 *  `face` is the face size on the undegraded photo (or undefined when none was detected). */
const HIDING: Record<string, { check: string; make: (img: RgbImage, face?: number) => Promise<RgbImage> }> = {
  'dark x0.12': { check: 'BadBrightness', make: (img) => toRgb(raw(img).linear(0.12, 0)) },
  // A blur only means something against the face it blurs: sigma 7 on a 132 px LFW face, scaled to each
  // face (a 400 px face gets 21), so every set loses the same detail in the aligned crop F_007 measures.
  // Without a detected face the photo's width stands in for it (LFW: 250 px wide for a 132 px face).
  'blurred sigma 7 (LFW face)': {
    check: 'BadSharpness',
    make: (img, face) => toRgb(raw(img).blur((7 * (face ?? (img.width * LFW_FACE) / 250)) / LFW_FACE)),
  },
  'rolled 50': { check: 'WrongFaceRoll', make: (img) => toRgb(raw(img).rotate(50, { background: '#808080' })) },
};
const asUpload = async (img: RgbImage) => toRgb(sharp(await raw(img).jpeg({ quality: 90 }).toBuffer()));

interface Sample {
  set: string; expected: string; faces: FaceAnalysis[]; image: ImageMeasures; before: string; after: string; rotation?: number;
  /** The code the roll re-check replaced with F_008 (roll-recheck.ts), if it did. */
  rechecked?: string;
  /** The code (with the diagnosis) if brightness and sharpness came before roll. */
  qualityFirst: string;
  /** Degraded sets: the code (with the diagnosis) of the undegraded original, as uploaded. */
  original?: string;
}

/** The chain with brightness and sharpness moved before roll: the order the chain's was chosen against. */
const QUALITY_FIRST = (() => {
  const rest = ENROLMENT_CHECKS.filter((c) => c.error !== 'BadBrightness' && c.error !== 'BadSharpness');
  const at = rest.findIndex((c) => c.error === 'WrongFaceRoll');
  return [...rest.slice(0, at), ...ENROLMENT_CHECKS.filter((c) => !rest.includes(c)), ...rest.slice(at)];
})();

/** Every LFW person whose index modulo 100 is one of `offsets`: their first photo. */
function lfwSample(data: string, ...offsets: number[]): string[] {
  const dir = path.join(data, 'lfw-view1', 'images');
  return fs.readdirSync(dir).sort().filter((_, k) => offsets.includes(k % 100)).map((n) => path.join(dir, n, fs.readdirSync(path.join(dir, n)).sort()[0]));
}

async function main() {
  const data = requireSharedData('bench:quality');
  const bounds = defaultConfig().quality;
  const engine: FaceEngine = await createEngine();
  const analyze = (img: RgbImage) => engine.analyze(img, { maxFaces: 4 });
  const detect = detectorOf(engine);
  const samples: Sample[] = [];
  const codeOf = (o: Awaited<ReturnType<typeof runEnrolmentChecks>>) => (o.ok ? 'pass' : o.error);
  let diagnosisMs = 0, diagnoses = 0, rechecks = 0, recheckMs = 0, recheckRuns = 0;
  /** Analyses a photo; the chain's code without (before) and with (after) the no-face diagnosis. */
  const sample = async (set: string, expected: string, img: RgbImage): Promise<Sample> => {
    const faces = await analyze(img);
    const none = async () => undefined;
    let rotation: number | undefined, rechecked: string | undefined;
    const before = codeOf(await runEnrolmentChecks(faces, bounds, none));
    const t0 = performance.now();
    // As persons.ts runs it: the no-face diagnosis, and the roll re-check for a face failing a later check.
    // Its result does not depend on the failed code: run once per photo, reused for the other order.
    let recheck: ReturnType<typeof recheckRoll> | undefined;
    const roll = (counted: boolean) => async (error: string) => {
      if (!ROLL_SENSITIVE.has(error as never)) return undefined;
      if (!recheck) {
        const t1 = performance.now();
        recheck = recheckRoll(img, faces[0], bounds, detect);
        const r = await recheck;
        rechecks++;
        recheckRuns += r.runs;
        recheckMs += performance.now() - t1;
      }
      const r = await recheck;
      if (r.error && counted) rechecked = error;
      return r.error ? { error: r.error, reason: r.reason } : undefined;
    };
    const after = codeOf(await runEnrolmentChecks(faces, bounds, none, {
      noFace: async () => {
        const d = await diagnoseNoFace(img, bounds, detect);
        rotation = d.found?.rotation;
        diagnoses++;
        return d;
      },
      roll: roll(true),
    }));
    if (!faces.length) diagnosisMs += performance.now() - t0;
    const alt = await runEnrolmentChecks(faces, bounds, none, { roll: roll(false) }, QUALITY_FIRST);
    const qualityFirst = faces.length ? codeOf(alt) : after;
    const s: Sample = { set, expected, faces, image: measureImage(img), before, after, rotation, rechecked, qualityFirst };
    samples.push(s);
    return s;
  };

  // Good photos: the single-person photos of identities/ (press and phone photos, not the tiny face-api crops).
  const ids = fs.readFileSync(path.join(data, 'identities', 'identities.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => l.split(',')[0]).filter((p) => !p.startsWith('faceapi/'));
  const goods: { img: RgbImage; face: FaceAnalysis }[] = [];
  for (const p of ids) {
    const img = await loadRgb(path.join(data, 'identities', p));
    const { faces } = await sample('good photos', 'pass', img);
    if (faces.length) goods.push({ img, face: faces[0] });
  }
  // Generated variants of every fourth good photo.
  for (const [name, v] of Object.entries(VARIANTS)) {
    for (let i = 0; i < goods.length; i += 4) {
      await sample(`variant: ${name}`, v.check, await v.make(goods[i].img, goods[i].face));
    }
  }
  // Bad photos of quality/.
  const rows = fs.readFileSync(path.join(data, 'quality', 'index.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
  for (const [condition, file] of rows) {
    const expected = BAD_CONDITIONS[condition];
    if (!expected || (condition === 'sunglasses' && file.includes('000_5'))) continue;
    await sample(`photos: ${condition}`, expected, await loadRgb(path.join(data, 'quality', file)));
  }

  // No photo of quality/ is pitched: three LFW photos that are (checked by eye), looking up or down.
  for (const p of ['Chris_Cornell/Chris_Cornell_0001.jpg', 'Ernie_Stewart/Ernie_Stewart_0001.jpg', 'Bill_OReilly/Bill_OReilly_0001.jpg']) {
    await sample('photos: pitched (LFW)', 'WrongFacePitch', await loadRgb(path.join(data, 'lfw-view1', 'images', p)));
  }

  // Photos degraded until the detector may miss the face. Tuning set: the LFW sample the image bounds were
  // chosen on. Held out: every good identities photo, the face-api crops, a disjoint LFW sample.
  const faceapi = fs.readFileSync(path.join(data, 'identities', 'identities.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => l.split(',')[0]).filter((p) => p.startsWith('faceapi/')).map((p) => path.join(data, 'identities', p));
  const hidingSources: [string, (RgbImage | string)[]][] = [
    ['tuning: LFW', lfwSample(data, 7)],
    ['order sample: LFW', lfwSample(data, 17, 27, 37, 47)],
    ['held out: identities', goods.map((g) => g.img)],
    ['held out: face-api crops', faceapi],
    ['held out: LFW', lfwSample(data, 57)],
  ];
  for (const [source, photos] of hidingSources) {
    for (const photo of photos) {
      const img = typeof photo === 'string' ? await loadRgb(photo) : photo;
      const { faces, after: original } = await sample(`${source}: good`, 'pass', await asUpload(img));
      for (const [name, v] of Object.entries(HIDING)) {
        (await sample(`${source}: ${name}`, v.check, await asUpload(await v.make(img, faces[0]?.faceSize)))).original = original;
      }
    }
  }

  // Per check: pass/fail counts of good photos and of the photos meant to fail it, checked alone.
  console.log(`\n== each check alone at the default bounds (${JSON.stringify(bounds)}) ==`);
  console.log('check            good pass/fail   bad pass/fail   bad sets');
  const perCheck: Record<string, unknown> = {};
  for (const check of ENROLMENT_CHECKS) {
    if (check.error === 'FaceExists') continue;
    const fails = async (s: Sample) => (s.faces.length === 0 ? check.error === 'NoFace'
      : (await check.fault({ faces: s.faces, face: s.faces[0], bounds, findDuplicate: async () => undefined })) !== undefined);
    const count = async (list: Sample[]) => (await Promise.all(list.map(fails))).filter(Boolean).length;
    const good = samples.filter((s) => s.set === 'good photos');
    // The degraded sets of the no-face diagnosis are reported on their own, below.
    const bad = samples.filter((s) => s.expected === check.error && !/^(tuning|order sample|held out):/.test(s.set));
    const gf = await count(good), bf = await count(bad);
    perCheck[check.error] = { goodPass: good.length - gf, goodFail: gf, badPass: bad.length - bf, badFail: bf };
    console.log(`${check.error.padEnd(16)} ${String(good.length - gf).padStart(5)}/${String(gf).padEnd(9)} ` +
      `${String(bad.length - bf).padStart(5)}/${String(bf).padEnd(8)} ${[...new Set(bad.map((s) => s.set))].join(', ')}`);
  }

  // The whole ordered chain: which code each set gets (with the no-face diagnosis).
  console.log('\n== the ordered chain: codes answered per set ==');
  const chain: Record<string, Record<string, number>> = {};
  for (const s of samples) (chain[s.set] ??= {})[s.after] = (chain[s.set][s.after] ?? 0) + 1;
  for (const [set, codes] of Object.entries(chain)) console.log(`${set.padEnd(40)} ${JSON.stringify(codes)}`);

  // Without and with the diagnosis: share of each set answered with its own code (good sets: pass), share
  // answered F_002, share answered another code. Sets the diagnosis never ran on are left out.
  console.log('\n== no-face diagnosis, % of the set: own code / F_002 / other code, without -> with ==');
  const noFace: Record<string, unknown> = {};
  const pct = (n: number, d: number) => +((100 * n) / d).toFixed(1);
  for (const set of Object.keys(chain)) {
    const list = samples.filter((s) => s.set === set);
    const share = (k: 'before' | 'after') => {
      const own = list.filter((s) => s[k] === s.expected).length, f002 = list.filter((s) => s[k] === 'NoFace').length;
      const other = list.filter((s) => s[k] !== s.expected && s[k] !== 'NoFace').length;
      return { own: pct(own, list.length), f002: pct(f002, list.length), other: pct(other, list.length) };
    };
    const row = { n: list.length, detected: list.filter((s) => s.faces.length).length, before: share('before'), after: share('after') };
    if (row.detected === row.n && !set.includes(': good')) continue;
    noFace[set] = row;
    console.log(`${set.padEnd(40)} n ${String(row.n).padStart(3)}  detected ${String(row.detected).padStart(3)}  ` +
      `${row.before.own}/${row.before.f002}/${row.before.other} -> ${row.after.own}/${row.after.f002}/${row.after.other}`);
  }
  // The chain's order against image quality before roll, on the degraded sets: % answered with the own code.
  console.log('\n== order: % own code, image quality before roll -> the chain (roll first) ==');
  const order: Record<string, [number, number]> = {};
  for (const set of Object.keys(chain).filter((k) => /^(tuning|order sample|held out):/.test(k) && !k.endsWith(': good'))) {
    const list = samples.filter((s) => s.set === set);
    const own = (k: 'qualityFirst' | 'after') => pct(list.filter((s) => s[k] === s.expected).length, list.length);
    order[set] = [own('qualityFirst'), own('after')];
    console.log(`${set.padEnd(44)} ${order[set][0]} -> ${order[set][1]}`);
  }
  // The headline measure: % own code over the photos whose undegraded original passes every enrolment check
  // (an ordinary, enrollable portrait), beside the % over all photos of the set. An original that already
  // fails (a 62 px face: F_011; a crop cut from a group photo showing a neighbour's face: F_001) fails in
  // every variant for a reason the degradation did not cause; it is excluded, and counted with its code.
  console.log('\n== degraded sets: % own code, good originals (n) | all photos (n); misses on good originals ==');
  const excludedOriginals: Record<string, { n: number; of: number; codes: Record<string, number> }> = {};
  for (const set of Object.keys(chain).filter((k) => /^(tuning|order sample|held out):/.test(k) && k.endsWith(': good'))) {
    const list = samples.filter((s) => s.set === set), bad = list.filter((s) => s.after !== 'pass');
    const codes: Record<string, number> = {};
    for (const s of bad) codes[s.after] = (codes[s.after] ?? 0) + 1;
    excludedOriginals[set.slice(0, -': good'.length)] = { n: bad.length, of: list.length, codes };
  }
  const ownCodeShareGoodOriginals: Record<string, { n: number; own: number; misses: Record<string, number> }> = {};
  const ownCodeShareAll: Record<string, { n: number; own: number }> = {};
  for (const set of Object.keys(order)) {
    const all = samples.filter((s) => s.set === set), good = all.filter((s) => s.original === 'pass');
    const misses: Record<string, number> = {};
    for (const s of good) if (s.after !== s.expected) misses[s.after] = (misses[s.after] ?? 0) + 1;
    ownCodeShareGoodOriginals[set] = { n: good.length, own: pct(good.filter((s) => s.after === s.expected).length, good.length), misses };
    ownCodeShareAll[set] = { n: all.length, own: pct(all.filter((s) => s.after === s.expected).length, all.length) };
    console.log(`${set.padEnd(44)} ${String(ownCodeShareGoodOriginals[set].own).padStart(5)} (${String(good.length).padStart(3)}) | ` +
      `${String(ownCodeShareAll[set].own).padStart(5)} (${String(all.length).padStart(3)})  misses ${JSON.stringify(misses)}`);
  }
  for (const [source, e] of Object.entries(excludedOriginals)) {
    console.log(`excluded originals, ${source}: ${e.n} of ${e.of} ${JSON.stringify(e.codes)}`);
  }
  // Which rotation found the face of a rolled photo (the search stops at the first).
  const rotations: Record<string, number> = {};
  for (const s of samples) if (s.rotation !== undefined) rotations[s.rotation] = (rotations[s.rotation] ?? 0) + 1;
  const diagnosisMeanMs = diagnoses ? +(diagnosisMs / diagnoses).toFixed(1) : 0;
  console.log(`rotations that found a face: ${JSON.stringify(rotations)}; ${diagnoses} diagnoses, mean ${diagnosisMeanMs} ms`);
  // The roll re-check: how often it ran, what it cost, which codes it turned into F_008, per set.
  const rollRecheck: Record<string, Record<string, number>> = {};
  for (const s of samples) if (s.rechecked) (rollRecheck[s.set] ??= {})[s.rechecked] = (rollRecheck[s.set][s.rechecked] ?? 0) + 1;
  const recheckMeanMs = rechecks ? +(recheckMs / rechecks).toFixed(1) : 0;
  console.log(`roll re-check: ${rechecks} runs (mean ${recheckMeanMs} ms, ${(recheckRuns / Math.max(1, rechecks)).toFixed(1)} detector runs); ` +
    `turned into F_008: ${JSON.stringify(rollRecheck)}`);

  // The diagnosis's image measures per set (min / median / max), for choosing its bounds.
  console.log('\n== image centre: brightness, contrast, sharpness (min / median / max) per set ==');
  const imageRanges: Record<string, Record<string, number[]>> = {};
  for (const set of Object.keys(chain)) {
    const ms = samples.filter((s) => s.set === set).map((s) => s.image);
    imageRanges[set] = {};
    const cells = (['brightness', 'contrast', 'sharpness'] as const).map((k) => {
      const v = ms.map((m) => m[k]).sort((a, b) => a - b);
      imageRanges[set][k] = [v[0], v[v.length >> 1], v[v.length - 1]].map((x) => +x.toFixed(1));
      return `${k} ${imageRanges[set][k].join('/')}`;
    });
    console.log(`${set.padEnd(40)} ${cells.join('  ')}`);
  }

  // Value ranges per set, for choosing bounds.
  console.log('\n== measured values (min / median / max) per set ==');
  const metric: Record<string, (f: FaceAnalysis) => number> = {
    faceSize: (f) => f.faceSize, yaw: (f) => Math.abs(f.pose.yaw), pitch: (f) => Math.abs(f.pose.pitch),
    roll: (f) => Math.abs(f.pose.roll), brightness: (f) => f.brightness, sharpness: (f) => f.sharpness,
    sunglasses: (f) => f.sunglasses, eyes: (f) => (f.eyes.left + f.eyes.right) / 2, mouth: (f) => f.mouthOpenness,
  };
  const ranges: Record<string, Record<string, number[]>> = {};
  for (const set of Object.keys(chain)) {
    const faces = samples.filter((s) => s.set === set && s.faces.length).map((s) => s.faces[0]);
    if (!faces.length) continue;
    ranges[set] = {};
    const cells = Object.entries(metric).map(([k, fn]) => {
      const v = faces.map(fn).sort((a, b) => a - b);
      ranges[set][k] = [v[0], v[v.length >> 1], v[v.length - 1]].map((x) => +x.toFixed(2));
      return `${k} ${ranges[set][k].join('/')}`;
    });
    console.log(`${set.padEnd(28)} ${cells.join('  ')}`);
  }

  // Pose: the model vs landmark geometry. Mirroring must negate yaw and roll; rotating by a degrees must add a to roll.
  const poseCheck = { model: { mirrorYaw: [] as number[], mirrorRoll: [] as number[], rotateRoll: [] as number[] },
    landmarks: { mirrorYaw: [] as number[], mirrorRoll: [] as number[], rotateRoll: [] as number[] } };
  const model = await poseModel();
  for (let i = 0; i < goods.length; i += 2) {
    const { img, face } = goods[i];
    const mirrored = await toRgb(raw(img).flop()), rotated = await toRgb(raw(img).rotate(15, { background: '#808080' }));
    const [m] = await analyze(mirrored);
    const [r] = await analyze(rotated);
    if (!m || !r) continue;
    const mp = await model.estimate(img, face), mm = await model.estimate(mirrored, m), mr = await model.estimate(rotated, r);
    poseCheck.model.mirrorYaw.push(Math.abs(mp.yaw + mm.yaw));
    poseCheck.model.mirrorRoll.push(Math.abs(mp.roll + mm.roll));
    poseCheck.model.rotateRoll.push(Math.abs(mr.roll - mp.roll - 15));
    // The engine's pose is the landmark geometry.
    poseCheck.landmarks.mirrorYaw.push(Math.abs(face.pose.yaw + m.pose.yaw));
    poseCheck.landmarks.mirrorRoll.push(Math.abs(face.pose.roll + m.pose.roll));
    poseCheck.landmarks.rotateRoll.push(Math.abs(r.pose.roll - face.pose.roll - 15));
  }
  await model.close();
  const med = (v: number[]) => +[...v].sort((a, b) => a - b)[v.length >> 1].toFixed(2);
  const poseSummary = Object.fromEntries(Object.entries(poseCheck).map(([k, v]) =>
    [k, Object.fromEntries(Object.entries(v).map(([m, e]) => [m, med(e)]))]));
  console.log('\n== pose: median absolute error in degrees (mirror: yaw and roll must flip sign; rotate 15°: roll must change by 15) ==');
  for (const [k, v] of Object.entries(poseSummary)) console.log(`${k.padEnd(10)} ${JSON.stringify(v)}`);

  await engine.close();
  printJsonLine({ bench: 'quality', bounds, perCheck, chain, ranges, pose: poseSummary,
    noFace: { sets: noFace, rotations, diagnosisMeanMs, imageRanges }, order,
    ownCodeShareGoodOriginals, ownCodeShareAll, excludedOriginals,
    rollRecheck: { runs: rechecks, meanMs: recheckMeanMs, detectorRunsPerRecheck: +(recheckRuns / Math.max(1, rechecks)).toFixed(2), toF008: rollRecheck } });
}

main().catch((e) => { console.error(e); process.exit(1); });
