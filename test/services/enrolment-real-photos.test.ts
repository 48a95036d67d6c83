// Every enrolment check at its default bound, through the API with the real engine: one real photo
// (or a generated variant of one) per F_ code that must fail with exactly that code, good photos that must
// all pass, the documented precedence, and the duplicate check F_012.
import fs from 'node:fs';
import sharp, { type Sharp } from 'sharp';
import t, { type Test } from 'tap';

import { startTestApp, type TestApp } from '../helpers/app';
import { realEngine } from '../helpers/engine';
import { b64, faceCrop, groupPhoto, photosSkip, type CropName } from '../helpers/photos';
import { dataPath, needsSharedData } from '../helpers/shared-data';

const enrol = (a: TestApp, id: string, photo: Buffer) =>
  a.call({ method: 'POST', url: `/person/face/${id}`, payload: { faceImage: b64(photo) } });

async function expectCode(t: Test, a: TestApp, photo: Buffer, code: string, what: string) {
  const res = await enrol(a, `p${Math.random().toString(36).slice(2, 10)}`, photo);
  t.equal(res.statusCode, code === 'pass' ? 200 : 400, `${what}: status`);
  if (code !== 'pass') t.equal(res.json().code, code, `${what}: ${code} (got ${res.body})`);
}

// Variants of a good face crop, each breaking one criterion.
const darker = (s: Sharp) => s.linear(0.3, 0);
const blurred = (s: Sharp) => s.blur(8);
const rotated = (s: Sharp) => s.rotate(35, { background: '#808080' });
const tiny = (s: Sharp) => s.resize(90);  // a face of about 50 px, below min_face_size 80
const twoFaces = async (photo: Buffer) => sharp({ create: { width: 960, height: 480, channels: 3, background: '#808080' } })
  .composite([{ input: photo, left: 0, top: 0 }, { input: await sharp(photo).flop().toBuffer(), left: 480, top: 0 }]).jpeg().toBuffer();
const blank = () => sharp({ create: { width: 480, height: 480, channels: 3, background: '#7a8a9a' } }).jpeg().toBuffer();

t.test('enrolment checks with the real engine at the default bounds', async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) {
    t.plan(0, `${skip || photos} - the enrolment checks did not run`);
    return;
  }
  // A fresh service (empty gallery) per check, so no photo trips the duplicate check F_012 by accident.
  const fresh = async (t: Test) => {
    const a = await startTestApp({ engine });
    t.teardown(() => a.close());
    return a;
  };
  // Crops A and B are level, frontal faces; the other crops of the demo photos tilt their heads (roll 24-27
  // degrees, yaw 37), which the checks rightly refuse, so the variants start from A and B.
  const good = (name: CropName, fn?: (s: Sharp) => Sharp) => faceCrop(name, fn);

  t.test('good photos pass', async (t) => {
    const a = await fresh(t);
    for (const name of ['A', 'B'] as CropName[]) await expectCode(t, a, await good(name), 'pass', `crop ${name}`);
  });
  t.test('good photos of ../shared/data pass', needsSharedData, async (t) => {
    const a = await fresh(t);
    for (const p of ['deepface/img1.jpg', 'deepface/img13.jpg', 'deepface/img18.jpg', 'face_recognition/biden/biden.jpg', 'compreface/005_A.jpg']) {
      await expectCode(t, a, fs.readFileSync(dataPath('identities', p)), 'pass', p);
    }
  });
  t.test('F_001 several faces', async (t) => {
    const a = await fresh(t);
    await expectCode(t, a, groupPhoto(3), 'F_001', 'group photo');
    await expectCode(t, a, await twoFaces(await good('A')), 'F_001', 'two faces side by side');
  });
  t.test('F_002 no face', async (t) => expectCode(t, await fresh(t), await blank(), 'F_002', 'plain image'));
  t.test('F_011 face too small', async (t) => expectCode(t, await fresh(t), await good('A', tiny), 'F_011', 'downscaled crop'));
  t.test('F_008 roll', async (t) => expectCode(t, await fresh(t), await good('B', rotated), 'F_008', 'crop rotated 35 degrees'));
  t.test('F_006 brightness', async (t) => expectCode(t, await fresh(t), await good('A', darker), 'F_006', 'darkened crop'));
  t.test('F_007 sharpness', async (t) => expectCode(t, await fresh(t), await good('B', blurred), 'F_007', 'blurred crop'));
  t.test('precedence: rotated and darker gives F_008 (pose is checked before brightness)', async (t) =>
    expectCode(t, await fresh(t), await good('B', (s) => darker(s).rotate(35, { background: '#202020' })), 'F_008', 'rotated + darker'));
  t.test('precedence: two faces, darker, gives F_001 (face count before brightness)', async (t) =>
    expectCode(t, await fresh(t), await twoFaces(await good('A', darker)), 'F_001', 'two darkened faces'));

  t.test('F_012 the same person under a second id; another person is no duplicate', async (t) => {
    const a = await fresh(t);
    t.equal((await enrol(a, 'dup-original', await good('A'))).statusCode, 200);
    const again = await enrol(a, 'dup-second-id', await good('A', (s) => s.flop().resize(420)));
    t.equal(again.statusCode, 400);
    t.equal(again.json().code, 'F_012', 'mirrored, smaller photo of the same face');
    const update = await a.call({ method: 'PUT', url: '/person/face/dup-original', payload: { faceImage: b64(await good('A', (s) => s.resize(440))) } });
    t.equal(update.statusCode, 200, 'updating the same person with their own face is no duplicate');
    t.equal((await enrol(a, 'dup-other', await good('B'))).statusCode, 200, 'a different person enrols');
  });

  t.test('shared photos: F_003, F_004, F_005, F_009, F_010', needsSharedData, async (t) => {
    const a = await fresh(t);
    const q = (p: string) => fs.readFileSync(dataPath('quality', p));
    await expectCode(t, a, q('human/stock-emotions-b-1.jpg'), 'F_003', 'eyes closed');
    await expectCode(t, a, q('faceapi/surprised.jpg'), 'F_004', 'mouth wide open');
    await expectCode(t, a, q('lfw/Jack_Nicholson/Jack_Nicholson_0001.jpg'), 'F_005', 'dark sunglasses');
    await expectCode(t, a, q('human/stock-emotions-a-2.jpg'), 'F_010', 'three-quarter view');
    // No photo of quality/ is pitched; these LFW photos are (checked by eye): looking up, looking down.
    const lfw = (p: string) => fs.readFileSync(dataPath('lfw-view1', 'images', p));
    await expectCode(t, a, lfw('Chris_Cornell/Chris_Cornell_0001.jpg'), 'F_009', 'looking up');
    await expectCode(t, a, lfw('Bill_OReilly/Bill_OReilly_0001.jpg'), 'F_009', 'looking down');
  });
});

