// The synthetic camera's photos: decoded at most SYNTHETIC_PHOTO_MAX_SIDE pixels on their longer side
// (smaller photos keep their size), one folder's files in name order, and the demo photos at that size
// still give the camera its ten face textures.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';

import { nativeCameraOptions } from '../../src/device/camera';
import { cameraAddon } from '../../src/device/native-camera';
import { decodePhoto, loadSyntheticPhotos, SYNTHETIC_PHOTO_MAX_SIDE } from '../../src/device/photos';
import { deviceConfig } from '../helpers/device';
import { samplePhotos } from '../helpers/sample-photos';

t.test('a large photo is decoded at the bounded size, its aspect kept', async (t) => {
  const file = samplePhotos()[0];
  const meta = await sharp(file).metadata();
  t.ok(meta.width! > SYNTHETIC_PHOTO_MAX_SIDE, `the demo photo is larger (${meta.width} px wide)`);
  const photo = await decodePhoto(file);
  t.equal(Math.max(photo.width, photo.height), SYNTHETIC_PHOTO_MAX_SIDE, 'longer side at the bound');
  t.ok(Math.abs(photo.width / photo.height - meta.width! / meta.height!) < 0.01, 'aspect ratio kept');
  t.equal(photo.data.length, photo.width * photo.height * 3, 'RGB');
});

t.test('smaller photos keep their size; a folder is read in name order', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-photos-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const solid = (w: number, h: number, r: number) => sharp({ create: { width: w, height: h, channels: 4, background: { r, g: 0, b: 0, alpha: 1 } } });
  await solid(300, 200, 10).png().toFile(path.join(dir, 'b.png'));
  await solid(120, 160, 20).jpeg().toFile(path.join(dir, 'a.jpg'));
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not an image');
  const photos = await loadSyntheticPhotos(dir);
  t.same(photos.map((p) => [p.width, p.height]), [[120, 160], [300, 200]], 'a.jpg then b.png, sizes kept, the text file ignored');
  t.equal(photos[1].data[0], 10, 'alpha removed, RGB kept');
  t.equal(photos[1].data.length, 300 * 200 * 3);
});

t.test('the demo photos at the bounded size give the camera its ten face textures', async (t) => {
  const photos = await Promise.all(samplePhotos().map(decodePhoto));
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'none:1', loop: false, realtime: false } } } });
  const options = await nativeCameraOptions(config, { photos });
  options.process = false;
  const handle = await cameraAddon.openCamera(options);
  t.teardown(() => handle.stop());
  t.equal(handle.textures, 10, 'the same ten faces as at full size pass the texture checks');
});
