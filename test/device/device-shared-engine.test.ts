// The device's API engine and its camera's engine share one ONNX Runtime session per model
// (native/core/ort/ort_session.cpp): analyses give the same results whichever engine loaded a model first,
// and closing one engine leaves the other's sessions working.
import t, { type Test } from 'tap';

import { createEngine } from '../../src/engine';
import type { FaceAnalysis } from '../../src/engine/types';
import { cameraAddon } from '../../src/device/native-camera';
import { nativeCameraOptions } from '../../src/device/camera';
import { decodePhoto } from '../../src/device/photos';
import { deviceConfig } from '../helpers/device';
import { samplePhotos } from '../helpers/sample-photos';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sameFaces(t: Test, a: FaceAnalysis[], b: FaceAnalysis[], what: string): void {
  t.equal(a.length, b.length, `${what}: as many faces`);
  t.same(a.map((f) => f.box), b.map((f) => f.box), `${what}: the same boxes`);
  t.ok(a.every((f, i) => f.embedding!.every((v, j) => v === b[i].embedding![j])), `${what}: bit-identical templates`);
  t.same(a.map((f) => [f.eyes, f.liveness]), b.map((f) => [f.eyes, f.liveness]), `${what}: the same eye and colour liveness scores`);
}

t.test('an engine and a running camera share sessions; either can close first', async (t) => {
  const image = await decodePhoto(samplePhotos()[2]);
  const first = await createEngine();
  const reference = await first.analyze(image);
  t.ok(reference.length > 0, 'faces found');

  // The camera's engine loads the same detector, landmark and eye models: shared with `first`.
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'live:30', loop: false, realtime: false, seed: 4248001 } } } });
  const options = await nativeCameraOptions(config, { photos: await Promise.all(samplePhotos().map(decodePhoto)) });
  options.reports = 'none';
  const camera = await cameraAddon.openCamera(options);
  t.teardown(() => camera.stop());
  camera.start();
  await sleep(300);
  sameFaces(t, await first.analyze(image), reference, 'while the camera analyses');

  // The API engine closes: the camera's analyses go on with the sessions it still holds.
  await first.close();
  const before = camera.status();
  await sleep(500);
  const after = camera.status();
  t.ok(after.framesAnalysed > before.framesAnalysed, `the camera still analyses (${after.framesAnalysed - before.framesAnalysed} frames)`);
  t.ok(after.liveCaptures > 0, 'and decides live faces');
  t.equal(after.lastError, '', 'without an error');

  // A new engine takes the camera's sessions again and gives the same results.
  const second = await createEngine();
  t.teardown(() => second.close());
  sameFaces(t, await second.analyze(image), reference, 'a new engine beside the camera');
  await camera.stop();
  sameFaces(t, await second.analyze(image), reference, 'after the camera stopped');
});
