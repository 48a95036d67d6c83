// The no-face diagnosis's decisions with a scripted detector: a dark or blurred image without a face is
// F_006 / F_007, a face found only on a rotated copy is F_008 with its roll, anything else stays F_002.
import t from 'tap';
import { defaultConfig } from '../../src/config/load';
import type { FaceAnalysis, RgbImage } from '../../src/engine/types';
import { runEnrolmentChecks } from '../../src/services/enrolment-checks';
import { diagnoseNoFace, measureImage, normaliseAngle, SEARCH_ROTATIONS, type Detect } from '../../src/services/no-face-diagnosis';

const bounds = defaultConfig().quality;

/** width x height RGB image whose grey level at (x, y) is f(x, y). */
function image(width: number, height: number, f: (x: number, y: number) => number): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.fill(Math.max(0, Math.min(255, Math.round(f(x, y)))), (y * width + x) * 3, (y * width + x) * 3 + 3);
  }
  return { data, width, height };
}
// Sharp detail (4 px checks) at a given level and depth; a soft gradient with contrast but no detail.
const checks = (level: number, depth: number) => image(400, 300, (x, y) => level + ((((x >> 2) + (y >> 2)) & 1) ? depth : -depth));
const gradient = image(400, 300, (x) => 60 + (120 * x) / 400);
const plain = image(400, 300, () => 128);

const face = (roll: number): FaceAnalysis => ({
  box: { x: 0, y: 0, width: 200, height: 200, score: 0.99 }, analyzed: true, landmarks: [], points5: [],
  pose: { yaw: 0, pitch: 0, roll }, eyes: { left: 1, right: 1 }, mouthOpenness: 0, sunglasses: 0,
  brightness: 128, sharpness: 500, faceSize: 200, eyeDistance: 80, liveness: 1, embedding: new Float32Array(0),
});

/** A detector that sees nothing, except on the n-th call (1-based) where it sees a face of residual roll. */
function scripted(foundOnCall?: number, residualRoll = 0): Detect & { calls: number; sizes: string[] } {
  const d = Object.assign(async (img: RgbImage) => {
    d.calls++;
    d.sizes.push(`${img.width}x${img.height}`);
    return d.calls === foundOnCall ? [face(residualRoll)] : [];
  }, { calls: 0, sizes: [] as string[] });
  return d;
}

t.test('measures: brightness is mean luma, contrast and sharpness are 0 on a plain image', async (t) => {
  const m = measureImage(plain);
  t.ok(Math.abs(m.brightness - 128) < 1e-6, `brightness ${m.brightness}`);
  t.ok(m.contrast < 0.01, `contrast ${m.contrast}`);
  t.ok(m.sharpness < 0.01, `sharpness ${m.sharpness}`);
  const c = measureImage(checks(128, 60));
  t.ok(c.sharpness > bounds.min_image_sharpness * 10, `fine detail is sharp (${c.sharpness})`);
  t.ok(measureImage(gradient).sharpness < bounds.min_image_sharpness, 'a soft gradient is not');
  // Luma weights as the engine's: pure green is brighter than pure blue.
  const green = { data: new Uint8Array(300 * 300 * 3).map((_, i) => (i % 3 === 1 ? 255 : 0)), width: 300, height: 300 };
  t.ok(Math.abs(measureImage(green).brightness - 0.587 * 255) < 0.01);
});

t.test('a dark image without a face: F_006, no detector run', async (t) => {
  const detect = scripted();
  const d = await diagnoseNoFace(checks(15, 8), bounds, detect);
  t.equal(d.error, 'BadBrightness', d.reason);
  t.match(d.reason, /brightness 15/);
  t.equal(detect.calls, 0);
  t.equal((await diagnoseNoFace(checks(240, 10), bounds, scripted())).error, 'BadBrightness', 'overexposed too');
});

t.test('a blurred image without a face: F_007, no detector run', async (t) => {
  const detect = scripted();
  const d = await diagnoseNoFace(gradient, bounds, detect);
  t.equal(d.error, 'BadSharpness', d.reason);
  t.equal(detect.calls, 0);
});

t.test('a face found only on a rotated copy: F_008 with the photo\'s roll', async (t) => {
  // Found on the second copy (rotated +30 clockwise) level within 4 degrees: the photo rolls -26.
  const detect = scripted(2, 4);
  const d = await diagnoseNoFace(checks(128, 60), bounds, detect);
  t.equal(d.error, 'WrongFaceRoll', d.reason);
  t.same(d.found, { rotation: SEARCH_ROTATIONS[1], roll: 4 - SEARCH_ROTATIONS[1] });
  t.match(d.reason, /roll -26/);
  t.equal(detect.calls, 2, 'the search stops at the first face');
  t.ok(detect.sizes.every((s) => Number(s.split('x')[0]) <= 640 * 1.5), `copies are reduced: ${detect.sizes}`);
});

t.test('a face a rotated copy finds level is no roll fault: F_002', async (t) => {
  const d = await diagnoseNoFace(checks(128, 60), bounds, scripted(1, -25));
  t.equal(d.error, 'NoFace', d.reason);
  t.equal(d.found?.roll, 5);
});

t.test('nothing anywhere: F_002 after every rotation', async (t) => {
  const detect = scripted();
  const d = await diagnoseNoFace(checks(128, 60), bounds, detect);
  t.equal(d.error, 'NoFace');
  t.equal(detect.calls, SEARCH_ROTATIONS.length);
});

t.test('a featureless or too small image: F_002 without measuring further', async (t) => {
  const detect = scripted(1, 0);
  t.equal((await diagnoseNoFace(plain, bounds, detect)).error, 'NoFace', 'plain grey');
  t.equal((await diagnoseNoFace(image(300, 300, () => 255), bounds, detect)).error, 'NoFace', 'blank white, not overexposed');
  t.equal((await diagnoseNoFace(image(300, 300, () => 0), bounds, detect)).error, 'NoFace', 'black, not too dark');
  t.equal((await diagnoseNoFace(image(64, 64, () => 10), bounds, detect)).error, 'NoFace', 'smaller than min_face_size');
  t.equal(detect.calls, 0);
});

t.test('the chain asks the diagnosis only when no face was found', async (t) => {
  const none = async () => undefined;
  let asked = 0;
  const diagnose = async () => { asked++; return { error: 'BadSharpness' as const, reason: 'blurred' }; };
  t.same(await runEnrolmentChecks([], bounds, none, diagnose), { ok: false, error: 'BadSharpness', reason: 'blurred' });
  t.equal(asked, 1);
  t.ok((await runEnrolmentChecks([face(0)], bounds, none, diagnose)).ok);
  t.equal(((await runEnrolmentChecks([face(40)], bounds, none, diagnose)) as { error: string }).error, 'WrongFaceRoll');
  t.equal(asked, 1, 'not asked when a face exists');
  t.equal(((await runEnrolmentChecks([], bounds, none)) as { error: string }).error, 'NoFace', 'without a diagnosis: F_002');
});

t.test('angles are normalised to (-180, 180]', async (t) => {
  t.same([normaliseAngle(200), normaliseAngle(-190), normaliseAngle(180), normaliseAngle(-180), normaliseAngle(30)], [-160, 170, 180, 180, 30]);
});
