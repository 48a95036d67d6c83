// The face a person operation works on: a photo sent as faceImage, or — in device mode — the live capture a
// faceKey from GET /person/face/ stands for. A faceKey gives the liveness-checked capture itself at full
// resolution (not the 120x120 JPEG), cropped around the face that passed, so a bystander elsewhere in the
// frame is neither counted (F_001) nor matched. Unknown or expired keys are R_003.
import sharp from 'sharp';
import type { RgbImage } from '../engine/types';
import type { DecodedImage } from '../image/decode';
import type { ServiceContext } from './context';
import { decodeField } from './images';
import type { LiveCaptureView } from '../device/live-face-source';

export type FaceInput = { faceImage: string } | { faceKey: string };

/** Margin around the live face's box, in box sizes, on each side of the crop. */
const CROP_MARGIN = 0.75;

export async function faceInputImage(ctx: ServiceContext, input: FaceInput): Promise<DecodedImage> {
  if ('faceImage' in input) return decodeField(ctx, 'faceImage', input.faceImage);
  const capture = ctx.camera?.resolveKey?.(input.faceKey);
  if (!capture) {
    throw ctx.errors.create('FieldsValidation',
      `faceKey: unknown or expired (a faceKey is valid ${ctx.config.liveness.face_key_ttl_s} s after GET /person/face/)`);
  }
  const rgb = cropAroundFace(capture);
  // The reference image kept for the person is the analysed crop (JPEG, as a sent photo would be).
  const bytes = await sharp(Buffer.from(rgb.data.buffer, rgb.data.byteOffset, rgb.data.byteLength), {
    raw: { width: rgb.width, height: rgb.height, channels: 3 },
  }).jpeg({ quality: 95 }).toBuffer();
  // The capture belongs to the camera's own bounded buffers, not to the request pixel budget.
  return { bytes, rgb, release: () => undefined };
}

export function cropAroundFace({ image, box }: LiveCaptureView): RgbImage {
  const margin = CROP_MARGIN * Math.max(box.width, box.height);
  const x0 = Math.max(0, Math.floor(box.x - margin)), y0 = Math.max(0, Math.floor(box.y - margin));
  const x1 = Math.min(image.width, Math.ceil(box.x + box.width + margin));
  const y1 = Math.min(image.height, Math.ceil(box.y + box.height + margin));
  const width = Math.max(1, x1 - x0), height = Math.max(1, y1 - y0);
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const from = ((y0 + y) * image.width + x0) * 3;
    data.set(image.data.subarray(from, from + width * 3), y * width * 3);
  }
  return { data, width, height };
}
