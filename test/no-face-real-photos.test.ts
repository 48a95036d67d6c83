// With the real engine: photos whose face the detector misses — made too dark, too blurred, rolled too far —
// get their own code through the API instead of F_002 (no-face-diagnosis.ts); a plain image stays F_002.
// Photos: crops of the face-api demo photos (npm, fetched at test time).
import sharp, { type Sharp } from 'sharp';
import t, { type Test } from 'tap';

import type { FaceEngine } from '../src/engine/types';
import { startTestApp } from './helpers/app';
import { realEngine } from './helpers/engine';
import { b64, faceCrop, photosSkip, type CropName } from './helpers/photos';

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
