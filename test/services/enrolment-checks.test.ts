// The enrolment checks run in one fixed, documented order; the first failing check answers.
import t from 'tap';
import { defaultConfig } from '../../src/config/load';
import type { FaceAnalysis } from '../../src/engine/types';
import type { RgbImage } from '../../src/engine/types';
import { ENROLMENT_CHECKS, countedFaces, runEnrolmentChecks } from '../../src/services/enrolment-checks';
import { LEVEL, recheckRoll, ROLL_SENSITIVE, rollRechecker, STEP } from '../../src/services/roll-recheck';

const bounds = defaultConfig().quality;
const good = (over: Partial<FaceAnalysis> = {}): FaceAnalysis => ({
  box: { x: 0, y: 0, width: 200, height: 200, score: 0.99 },
  analyzed: true,
  landmarks: [],
  points5: [],
  pose: { yaw: 0, pitch: 0, roll: 0 },
  eyes: { left: 1, right: 1 },
  mouthOpenness: 0.05,
  sunglasses: 0,
  brightness: 128,
  sharpness: 500,
  faceSize: 200,
  eyeDistance: 80,
  liveness: 1,
  embedding: new Float32Array(4),
  ...over,
});
const none = async () => undefined;

t.test('the documented order', async (t) => {
  t.same(ENROLMENT_CHECKS.map((c) => c.error), [
    'NoFace', 'NotOneFace', 'WrongFaceSize', 'WrongFaceRoll', 'BadBrightness', 'BadSharpness',
    'WrongFaceYaw', 'WrongFacePitch', 'SunglassesExist', 'EyesClosed', 'MouthOpen', 'FaceExists',
  ]);
});

t.test('a good face passes and is returned', async (t) => {
  const f = good();
  t.same(await runEnrolmentChecks([f], bounds, none), { ok: true, face: f });
});

t.test('each criterion alone', async (t) => {
  // Just beyond each default bound (config.test.ts pins the values).
  const b = bounds;
  const cases: [string, FaceAnalysis[], string][] = [
    ['no face', [], 'NoFace'],
    ['two comparable faces', [good(), good({ faceSize: 150 })], 'NotOneFace'],
    ['small', [good({ faceSize: b.min_face_size - 1 })], 'WrongFaceSize'],
    ['yaw', [good({ pose: { yaw: -(b.max_yaw + 1), pitch: 0, roll: 0 } })], 'WrongFaceYaw'],
    ['pitch', [good({ pose: { yaw: 0, pitch: b.max_pitch + 1, roll: 0 } })], 'WrongFacePitch'],
    ['roll', [good({ pose: { yaw: 0, pitch: 0, roll: -(b.max_roll + 1) } })], 'WrongFaceRoll'],
    ['dark', [good({ brightness: b.min_brightness - 1 })], 'BadBrightness'],
    ['bright', [good({ brightness: b.max_brightness + 1 })], 'BadBrightness'],
    ['blurred', [good({ sharpness: b.min_sharpness - 1 })], 'BadSharpness'],
    ['sunglasses', [good({ sunglasses: b.max_sunglasses + 0.01 })], 'SunglassesExist'],
    ['both eyes closed', [good({ eyes: { left: 0, right: 0 } })], 'EyesClosed'],
    // min_eye_openness bounds the MEAN of both eyes.
    ['mean eye openness just below', [good({ eyes: { left: b.min_eye_openness + 0.01, right: b.min_eye_openness - 0.03 } })], 'EyesClosed'],
    ['mouth', [good({ mouthOpenness: b.max_mouth_openness + 0.01 })], 'MouthOpen'],
  ];
  for (const [name, faces, error] of cases) {
    const out = await runEnrolmentChecks(faces, bounds, none);
    t.equal(out.ok ? 'ok' : out.error, error, name);
  }
  const dup = await runEnrolmentChecks([good()], bounds, async () => 'someone');
  t.same(dup.ok ? 'ok' : [dup.error, dup.reason], ['FaceExists', 'matches enrolled person someone']);
});

t.test('eye openness is the mean of both eyes: one misread eye does not reject an open-eyed face', async (t) => {
  t.ok(bounds.min_eye_openness <= 0.5, 'premise: one open eye (1) and one read as closed (0) average 0.5');
  t.ok((await runEnrolmentChecks([good({ eyes: { left: 1, right: 0 } })], bounds, none)).ok, 'right eye misread');
  t.ok((await runEnrolmentChecks([good({ eyes: { left: 0, right: 1 } })], bounds, none)).ok, 'left eye misread');
});

t.test('bounds are inclusive', async (t) => {
  const b = bounds;
  const at = (over: Partial<FaceAnalysis>) => good({
    faceSize: b.min_face_size, pose: { yaw: b.max_yaw, pitch: -b.max_pitch, roll: b.max_roll }, brightness: b.min_brightness,
    sharpness: b.min_sharpness, sunglasses: b.max_sunglasses, eyes: { left: b.min_eye_openness, right: b.min_eye_openness },
    mouthOpenness: b.max_mouth_openness, ...over,
  });
  t.ok((await runEnrolmentChecks([at({})], bounds, none)).ok, 'every lower/upper bound at once');
  t.ok((await runEnrolmentChecks([at({ pose: { yaw: -b.max_yaw, pitch: b.max_pitch, roll: -b.max_roll }, brightness: b.max_brightness })], bounds, none)).ok,
    'the other signs and the upper brightness bound');
});

t.test('background faces smaller than background_face_ratio x the largest do not count', async (t) => {
  t.equal(countedFaces([good(), good({ faceSize: 99 })], 0.5).length, 1);
  t.equal(countedFaces([good(), good({ faceSize: 100 })], 0.5).length, 2);
  t.ok((await runEnrolmentChecks([good(), good({ faceSize: 60, analyzed: false })], bounds, none)).ok);
});

// Roll before the image quality (the crop brightness and sharpness are measured in is aligned on the eyes),
// the image quality before yaw and pitch (finer landmarks that darkness and blur displace).
t.test('precedence: the earlier criterion wins', async (t) => {
  const bad = good({
    faceSize: 50, pose: { yaw: 40, pitch: 40, roll: 40 }, brightness: 10, sharpness: 5, sunglasses: 1, eyes: { left: 0, right: 0 }, mouthOpenness: 1,
  });
  const order = ['WrongFaceSize', 'WrongFaceRoll', 'BadBrightness', 'BadSharpness', 'WrongFaceYaw', 'WrongFacePitch', 'SunglassesExist', 'EyesClosed', 'MouthOpen'];
  let face = bad;
  for (const expected of order) {
    const out = await runEnrolmentChecks([face], bounds, none);
    t.equal(out.ok ? 'ok' : out.error, expected);
    // Fix the reported fault and check the next one comes out.
    face = { ...face, ...fixes[expected] };
  }
  t.ok((await runEnrolmentChecks([face], bounds, none)).ok);
  t.equal(((await runEnrolmentChecks([bad, bad], bounds, none)) as { error: string }).error, 'NotOneFace');
});

const fixes: Record<string, Partial<FaceAnalysis>> = {
  WrongFaceSize: { faceSize: 200 },
  WrongFaceRoll: { pose: { yaw: 40, pitch: 40, roll: 0 } },
  BadBrightness: { brightness: 128 },
  BadSharpness: { sharpness: 500 },
  WrongFaceYaw: { pose: { yaw: 0, pitch: 40, roll: 0 } },
  WrongFacePitch: { pose: { yaw: 0, pitch: 0, roll: 0 } },
  SunglassesExist: { sunglasses: 0 },
  EyesClosed: { eyes: { left: 1, right: 1 } },
  MouthOpen: { mouthOpenness: 0 },
};

// The roll re-check (roll-recheck.ts): a face whose landmarks misread a strong roll fails a later check;
// copies turned back towards upright name the roll. The fake detector answers by call order: 1 = the copy
// turned -STEP, 2 = +STEP, then the copies turned back by a candidate; `rolls[i]` is the face's roll read on
// call i + 1 (undefined: no face). Its copies' sizes tell the turn (a 300x10 image).
function scriptedRolls(rolls: (number | undefined)[]) {
  const d = Object.assign(async (img: RgbImage) => {
    const r = rolls[d.turns.length];
    // Height of a 300x10 image turned by a: 300 |sin a| + 10 |cos a|, rising up to 88 degrees: |a| to the degree.
    const h = (a: number) => 300 * Math.sin((a * Math.PI) / 180) + 10 * Math.cos((a * Math.PI) / 180);
    let best = 0;
    for (let a = 0; a <= 88; a++) if (Math.abs(h(a) - img.height) < Math.abs(h(best) - img.height)) best = a;
    d.turns.push(best);
    return r === undefined ? [] : [good({ pose: { yaw: 0, pitch: 0, roll: r }, points5: centre(img) })];
  }, { turns: [] as number[] });
  return d;
}
/** Five points at the copy's centre: mapped back, the photo's centre, inside the failing face's box. */
const centre = (img: RgbImage) => Array.from({ length: 5 }, () => ({ x: img.width / 2, y: img.height / 2 }));
const failing = good({ box: { x: 50, y: -95, width: 200, height: 200, score: 0.99 } });
const wide: RgbImage = { data: new Uint8Array(300 * 10 * 3).fill(128), width: 300, height: 10 };

t.test('roll re-check: a 50 degree face read as 17 is F_008, confirmed on a copy turned back', async (t) => {
  // -30 copy: the face at 20, read 20 (candidate 50); +30 copy: the face at 80, misread -2 (candidate -32,
  // most upright on its copy, so tried first); turned back by +32 the face (at 82) reads 45: not level,
  // rejected; turned back by -50 it reads 1: roll 51.
  const detect = scriptedRolls([20, -2, 45, 1]);
  const r = await recheckRoll(wide, failing, bounds, detect);
  t.equal(r.error, 'WrongFaceRoll', r.reason);
  t.equal(r.roll, 51);
  t.equal(r.runs, 4);
  t.same(detect.turns, [STEP, STEP, 32, 50], 'turns -30, +30, then back by each candidate');
});

t.test('roll re-check: an upright face reads its own roll on both copies: the code stands', async (t) => {
  const detect = scriptedRolls([-27, 33]);
  const r = await recheckRoll(wide, failing, bounds, detect);
  t.equal(r.error, undefined, r.reason);
  t.equal(r.runs, 2, 'no candidate beyond max_roll: nothing to confirm');
});

t.test('roll re-check: a candidate the copy turned back does not read level is not believed', async (t) => {
  // Candidates 55 and -40, neither confirmed (their turned-back copies read 25 and no face).
  const r = await recheckRoll(wide, failing, bounds, scriptedRolls([25, -10, undefined, LEVEL + 15]));
  t.equal(r.error, undefined, r.reason);
  t.equal(r.runs, 4, 'at most four detector runs');
  t.equal((await recheckRoll(wide, failing, bounds, scriptedRolls([]))).error, undefined, 'no face on either copy');
});

t.test('roll re-check in the chain: only for the codes a roll can cause, after the check that failed', async (t) => {
  let asked: string[] = [];
  const roll = async (error: string) => { asked.push(error); return { error: 'WrongFaceRoll' as const, reason: 'rolled 50' }; };
  const blurred = await runEnrolmentChecks([good({ sharpness: 10 })], bounds, none, { roll });
  t.same(blurred, { ok: false, error: 'WrongFaceRoll', reason: `sharpness 10 below ${bounds.min_sharpness}; rolled 50` });
  t.same(asked, ['BadSharpness']);
  asked = [];
  t.ok((await runEnrolmentChecks([good()], bounds, none, { roll })).ok, 'a passing photo: not asked');
  t.equal(((await runEnrolmentChecks([good({ pose: { yaw: 0, pitch: 0, roll: 40 } })], bounds, none, { roll: async () => undefined })) as { error: string }).error,
    'WrongFaceRoll', 'the code stands when the re-check answers nothing');
  t.same(asked, []);
  // Through rollRechecker: F_008, F_002 and F_012 are not roll-sensitive, and cost no detector run.
  const detect = scriptedRolls([20, -2, 45, 1]);
  const rechecker = rollRechecker(wide, bounds, detect);
  for (const code of ['WrongFaceRoll', 'NoFace', 'FaceExists'] as const) t.equal(await rechecker(code, failing), undefined, code);
  t.equal(detect.turns.length, 0);
  t.notOk(ROLL_SENSITIVE.has('FaceExists'));
  t.equal((await rechecker('NotOneFace', failing))?.error, 'WrongFaceRoll');
  const dup = await runEnrolmentChecks([good()], bounds, async () => 'p1', { roll });
  t.equal((dup as { error: string }).error, 'FaceExists', 'F_012 is never re-checked');
});

t.test('roll re-check: a face still dark or blurred once turned back is not believed (its landmarks are not)', async (t) => {
  for (const over of [{ sharpness: bounds.min_sharpness - 1 }, { brightness: bounds.min_brightness - 1 }]) {
    let calls = 0;
    const detect = async (img: RgbImage) =>
      [good({ pose: { yaw: 0, pitch: 0, roll: [20, -2, 1, 1][calls] }, points5: centre(img), ...(calls++ >= 2 ? over : {}) })];
    const r = await recheckRoll(wide, failing, bounds, detect);
    t.equal(r.error, undefined, `${JSON.stringify(over)}: ${r.reason}`);
    t.equal(calls, 4, 'both candidates (-32, 50) tried and refused');
  }
});

t.test('roll re-check: only the failing face counts, not another face on the copies', async (t) => {
  // The copies show a face rolled 50 (as in the first re-check test), but its points map back outside the
  // failing face's box (a neighbour in a group photo), or it has no points: nothing is believed.
  const elsewhere = good({ box: { x: 0, y: -300, width: 40, height: 40, score: 0.99 } });
  t.equal((await recheckRoll(wide, elsewhere, bounds, scriptedRolls([20, -2, 45, 1]))).error, undefined, 'outside its box');
  const noPoints = async () => [good({ pose: { yaw: 0, pitch: 0, roll: 20 } })];
  t.equal((await recheckRoll(wide, failing, bounds, noPoints)).error, undefined, 'a face without points');
});
