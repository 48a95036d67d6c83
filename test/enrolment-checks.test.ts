// [issue 3] The enrolment checks run in one fixed, documented order; the first failing check answers.
import t from 'tap';
import { defaultConfig } from '../src/config/load';
import type { FaceAnalysis } from '../src/engine/types';
import { ENROLMENT_CHECKS, countedFaces, runEnrolmentChecks } from '../src/services/enrolment-checks';

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
