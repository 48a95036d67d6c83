// With the real engine: photos whose face the detector misses — made too dark, too blurred, rolled too far —
// get their own code through the API instead of F_002 (no-face-diagnosis.ts); a plain image stays F_002.
// And a face the detector finds but whose landmarks misread a strong roll: F_008, not the code the misread
// roll causes (roll-recheck.ts).
// Photos: crops of the face-api demo photos (npm, fetched at test time).
import sharp, { type Sharp } from 'sharp';
import t, { type Test } from 'tap';

import type { FaceEngine } from '../../src/engine/types';
import { startTestApp } from '../helpers/app';
import { realEngine } from '../helpers/engine';
import { b64, faceCrop, photosSkip, type CropName } from '../helpers/photos';

async function rgbOf(jpeg: Buffer) {
  const { data, info } = await sharp(jpeg).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

t.test('no face detected: the photo\'s fault is named, with the real engine', async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) {
    t.plan(0, `${skip || photos} - the no-face diagnosis did not run`);
    return;
  }
  const a = await startTestApp({ engine });
  t.teardown(() => a.close());

  const expectCode = async (t: Test, e: FaceEngine, photo: Buffer, code: string) => {
    // The premise: the detector itself finds no face, so only the diagnosis can name the fault.
    t.equal((await e.analyze(await rgbOf(photo), { embed: false })).length, 0, 'the detector finds no face');
    const res = await a.call({ method: 'POST', url: `/person/face/p${Math.random().toString(36).slice(2, 10)}`, payload: { faceImage: b64(photo) } });
    t.equal(res.statusCode, 400);
    t.equal(res.json().code, code, res.body);
  };
  const crop = (name: CropName, fn: (s: Sharp) => Sharp) => faceCrop(name, fn);

  t.test('too dark (levels x0.12): F_006', async (t) => expectCode(t, engine, await crop('A', (s) => s.linear(0.12, 0)), 'F_006'));
  t.test('too blurred (Gaussian sigma 10): F_007', async (t) => expectCode(t, engine, await crop('A', (s) => s.blur(10)), 'F_007'));
  // Crop D's head already tilts about 25 degrees: turned 60 more, it is found only on a copy turned back.
  t.test('rolled about 85 degrees: F_008', async (t) =>
    expectCode(t, engine, await crop('D', (s) => s.rotate(60, { background: '#808080' })), 'F_008'));
  t.test('a plain image: F_002', async (t) =>
    expectCode(t, engine, await sharp({ create: { width: 480, height: 480, channels: 3, background: '#7a8a9a' } }).jpeg().toBuffer(), 'F_002'));
});

t.test('a face found but rolled further than its landmarks read: F_008, with the real engine', async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) {
    t.plan(0, `${skip || photos} - the roll re-check did not run`);
    return;
  }
  const a = await startTestApp({ engine });
  t.teardown(() => a.close());
  const bounds = (await import('../../src/config/load')).defaultConfig().quality;
  const post = async (photo: Buffer) => (await a.call({
    method: 'POST', url: `/person/face/p${Math.random().toString(36).slice(2, 10)}`, payload: { faceImage: b64(photo) },
  }));

  // Crop A turned 55 degrees (its face then rolls about 67): the detector finds it, the landmarks read a
  // roll of about 2 degrees, and the misaligned crop reads blurred (F_007 without the re-check).
  const rolled = await faceCrop('A', (s) => s.rotate(55, { background: '#808080' }));
  const [face] = await engine.analyze(await rgbOf(rolled), { embed: false });
  t.ok(face, 'the detector finds the face');
  t.ok(Math.abs(face.pose.roll) <= bounds.max_roll, `its landmarks read roll ${face.pose.roll.toFixed(1)}, within max_roll`);
  t.ok(face.sharpness < bounds.min_sharpness, `the misaligned crop reads blurred (${face.sharpness.toFixed(1)})`);
  const res = await post(rolled);
  t.equal(res.statusCode, 400);
  t.equal(res.json().code, 'F_008', res.body);

  // A photo failing a later check keeps its code when no roll beyond max_roll is confirmed: crop C turned
  // 40 degrees reads roll 11 and yaw -36 (F_010); its copies turned -30 / +30 read rolls 15 / 6.
  const yawed = await faceCrop('C', (s) => s.rotate(40, { background: '#808080' }));
  t.equal((await post(yawed)).json().code, 'F_010');
});
