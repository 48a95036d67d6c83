// Image helpers for tests: decode files to RGB and make variants (mirror, darker, blurred, crops).
import sharp, { type Sharp } from 'sharp';

import type { RgbImage } from '../../src/engine/types';

async function toRgb(pipeline: Sharp): Promise<RgbImage> {
  const { data, info } = await pipeline.removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

export const loadRgb = (file: string | Buffer): Promise<RgbImage> => toRgb(sharp(file).rotate());

/** Applies a sharp transformation to an RGB image and returns RGB again. */
export function transform(image: RgbImage, fn: (s: Sharp) => Sharp): Promise<RgbImage> {
  return toRgb(fn(sharp(Buffer.from(image.data), { raw: { width: image.width, height: image.height, channels: 3 } })));
}

export const mirrored = (image: RgbImage) => transform(image, (s) => s.flop());
export const darker = (image: RgbImage, factor = 0.4) => transform(image, (s) => s.linear(factor, 0));
export const blurred = (image: RgbImage, sigma = 6) => transform(image, (s) => s.blur(sigma));

/** A plain image of one colour, or seeded noise. */
export function solid(width: number, height: number, value = 128): RgbImage {
  return { data: new Uint8Array(width * height * 3).fill(value), width, height };
}

export function noise(width: number, height: number, seed = 1): RgbImage {
  const data = new Uint8Array(width * height * 3);
  let s = seed >>> 0;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    data[i] = s >>> 24;
  }
  return { data, width, height };
}
