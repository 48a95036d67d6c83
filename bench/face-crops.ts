// Real face photos for the API benchmarks: each face the engine finds in a face-api demo group photo (npm
// registry, cached), cut out square at about twice its width and scaled to 480 px, as a gate camera or a
// phone would send it. Largest face first.
import path from 'node:path';
import sharp from 'sharp';

import { createEngine } from '../src/engine';
import { loadRgb } from './common';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packTarball, extractEntries, cacheDir } = require('../../scripts/npm-tarball');

export async function faceCrops(sample: number, max: number): Promise<Buffer[]> {
  const [file] = extractEntries(packTarball('@vladmandic/face-api@1.7.15'), [`package/demo/sample${sample}.jpg`],
    path.join(cacheDir(), 'face-api-demo'));
  const engine = await createEngine();
  const image = await loadRgb(file);
  const faces = await engine.analyze(image, { embed: false });
  await engine.close();
  const crops: Buffer[] = [];
  for (const face of faces.slice(0, max)) {
    const side = Math.round(face.box.width * 2);
    const left = Math.max(0, Math.round(face.box.x + face.box.width / 2 - side / 2));
    const top = Math.max(0, Math.round(face.box.y + face.box.height / 2 - side / 2));
    crops.push(await sharp(file)
      .extract({ left, top, width: Math.min(side, image.width - left), height: Math.min(side, image.height - top) })
      .resize(480).jpeg({ quality: 90 }).toBuffer());
  }
  return crops;
}
