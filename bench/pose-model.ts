// The fr_pose model run from TypeScript (onnxruntime-node + sharp), for bench:quality's comparison with the
// landmark pose the engine uses: the box grown by a quarter on each side, 224x224, ImageNet normalisation,
// three heads of 66 bins of 3 degrees.
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

import type { FaceAnalysis, FacePose, RgbImage } from '../src/engine/types';
import { packageRoot } from '../src/package-root';

const SIZE = 224;
const MEAN = [123.675, 116.28, 103.53], STD = [58.395, 57.12, 57.375];

function binnedAngle(logits: Float32Array): number {
  let mx = -Infinity, sum = 0, expected = 0;
  for (const v of logits) mx = Math.max(mx, v);
  const p = Array.from(logits, (v) => Math.exp(v - mx));
  for (const v of p) sum += v;
  p.forEach((v, i) => { expected += (v / sum) * i; });
  return expected * 3 - 99;
}

export async function poseModel(): Promise<{ estimate(img: RgbImage, face: FaceAnalysis): Promise<FacePose>; close(): Promise<void> }> {
  const session = await ort.InferenceSession.create(path.join(packageRoot(), 'models', 'fr_pose.onnx'));
  return {
    async estimate(img, face) {
      const grow = face.box.width / 4, side = face.box.width + 2 * grow;
      const left = Math.round(face.box.x - grow), top = Math.round(face.box.y - grow), size = Math.round(side);
      // Pad with the mean colour so a box near the border keeps its geometry (sharp extends after it extracts,
      // so the padding is a pass of its own).
      const padded = await sharp(Buffer.from(img.data), { raw: { width: img.width, height: img.height, channels: 3 } })
        .extend({ top: size, bottom: size, left: size, right: size, background: '#7b7468' }).raw().toBuffer();
      const data = await sharp(padded, { raw: { width: img.width + 2 * size, height: img.height + 2 * size, channels: 3 } })
        .extract({ left: left + size, top: top + size, width: size, height: size })
        .resize(SIZE, SIZE, { fit: 'fill' }).raw().toBuffer();
      const n = SIZE * SIZE, input = new Float32Array(3 * n);
      for (let i = 0; i < n; i++) for (let c = 0; c < 3; c++) input[c * n + i] = (data[3 * i + c] - MEAN[c]) / STD[c];
      const out = await session.run({ input: new ort.Tensor('float32', input, [1, 3, SIZE, SIZE]) });
      const [yaw, pitch, roll] = session.outputNames.map((k) => binnedAngle(out[k].data as Float32Array));
      return { yaw, pitch, roll };
    },
    close: () => session.release(),
  };
}
