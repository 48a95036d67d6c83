// Spec 2 "Live face": in device mode a faceKey from GET /person/face/ stands in for faceImage in
// create, update, identify and verify: the live capture itself is used, cropped around the face that passed
// liveness. Exactly one of faceImage and faceKey; unknown or expired keys are R_003; cloud mode has no faceKey.
import sharp from 'sharp';
import t from 'tap';
import type { RgbImage } from '../../src/engine/types';
import { cropAroundFace } from '../../src/services/face-input';
import type { LiveCaptureView, LiveFaceSource } from '../../src/device/live-face-source';
import { startTestApp } from '../helpers/app';
import { fakePhoto, fakePhotoB64 } from '../helpers/fake-engine';

async function rgbOf(png: Buffer): Promise<RgbImage> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height };
}

/** A camera stand-in whose captures are given by the test. */
function stubCamera(captures: Map<string, LiveCaptureView>): LiveFaceSource {
  return {
    connected: () => true,
    latest: async () => null,
    resolveKey: (key) => captures.get(key),
  };
}

t.test('device mode: a faceKey enrols, identifies, verifies and updates with the live capture', async (t) => {
  const captures = new Map<string, LiveCaptureView>();
  // The fake engine reads its marker from the first pixel row: the box covers the whole 64x64 frame, so
  // the crop keeps it and the fake "sees" identity 1.
  const whole = { x: 0, y: 0, width: 64, height: 64 };
  captures.set('lf_alice', { image: await rgbOf(await fakePhoto({ identity: 1 })), box: whole });
  captures.set('lf_bob', { image: await rgbOf(await fakePhoto({ identity: 2 })), box: whole });
  const a = await startTestApp({ tune: (c) => { c.server.mode = 'device'; }, deps: { camera: stubCamera(captures) } });
  t.teardown(() => a.close());
  const post = (url: string, payload: Record<string, unknown>, method: 'POST' | 'PUT' = 'POST') => a.call({ method, url, payload });

  t.equal((await post('/person/face/alice', { faceKey: 'lf_alice' })).statusCode, 200, 'create with a faceKey');
  const stored = a.store.persons.referenceImage('default', 'alice');
  t.equal((await sharp(stored!).metadata()).format, 'jpeg', 'the reference image is the capture, as JPEG');
  t.equal((await post('/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1 }) })).json().personId, 'alice',
    'a photo of the same face finds the person enrolled from the capture');
  t.equal((await post('/person/recognize-face', { faceKey: 'lf_alice' })).json().personId, 'alice', 'identify with a faceKey');
  t.equal((await post('/person/verify-face/alice', { faceKey: 'lf_alice' })).statusCode, 200, 'verify with a faceKey');
  t.equal((await post('/person/verify-face/alice', { faceKey: 'lf_bob' })).statusCode, 410, 'another face: RF_001');
  t.equal((await post('/person/face/alice', { faceKey: 'lf_bob' }, 'PUT')).statusCode, 200, 'update with a faceKey');
  t.equal((await post('/person/recognize-face', { faceKey: 'lf_bob' })).json().personId, 'alice', 'now alice is bob\'s face');

  for (const [what, body] of [
    ['unknown faceKey', { faceKey: 'lf_nobody' }],
    ['both fields', { faceKey: 'lf_alice', faceImage: await fakePhotoB64({ identity: 1 }) }],
    ['neither field', {}],
    ['empty faceKey', { faceKey: '' }],
    ['faceKey not a string', { faceKey: 7 }],
  ] as const) {
    const res = await post('/person/recognize-face', body);
    t.equal(res.statusCode, 400, what);
    t.equal(res.json().code, 'R_003', what);
  }
});

t.test('cloud mode knows no faceKey', async (t) => {
  const a = await startTestApp();
  t.teardown(() => a.close());
  const res = await a.call({ method: 'POST', url: '/person/face/alice', payload: { faceKey: 'lf_x' } });
  t.equal(res.statusCode, 400);
  t.equal(res.json().code, 'R_003');
  const openapi = (await a.call({ method: 'GET', url: '/openapi.json', key: null })).json();
  t.notMatch(JSON.stringify(openapi.paths['/person/recognize-face']), /faceKey/, 'not in the cloud OpenAPI document');
});

t.test('the capture is cropped around the live face, margins clipped to the frame', async (t) => {
  const width = 200, height = 100;
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[(y * width + x) * 3] = x;  // red = column
  const crop = cropAroundFace({ image: { data, width, height }, box: { x: 20, y: 30, width: 20, height: 20 } });
  t.same([crop.width, crop.height], [50, 50], 'box 20 px + 15 px each side (x 5..55, y 15..65)');
  t.equal(crop.data[0], 5, 'starts at column 5');
  t.equal(crop.data[(49 * 50 + 49) * 3], 54, 'ends at column 54');
  const edge = cropAroundFace({ image: { data, width, height }, box: { x: 180, y: 80, width: 20, height: 20 } });
  t.same([edge.width, edge.height], [35, 35], 'clipped at the right and bottom edges');
  t.equal(edge.data[0], 165);
});
