// Real photos for API tests: single-face crops cut from the face-api demo group photos (fetched from the
// npm registry into the cache by sample-photos.ts, never committed), and the group photos themselves.
import fs from 'node:fs';
import sharp, { type Sharp } from 'sharp';
import { samplePhotos } from './sample-photos';

/**
 * Face centres (original pixels) of five different people in the demo group photos whose 480x480 crops
 * pass the default enrolment checks with the real engine and are mutually dissimilar (cosine <= 0.11).
 */
export const CROPS = {
  A: { sample: 3, cx: 1187, cy: 354 },
  B: { sample: 3, cx: 690, cy: 462 },
  C: { sample: 4, cx: 345, cy: 317 },
  D: { sample: 4, cx: 1344, cy: 274 },
  E: { sample: 6, cx: 1590, cy: 414 },
} as const;
export type CropName = keyof typeof CROPS;

const CROP_SIDE = 480;

let photos: string[] | undefined;
let failure: string | undefined;

/** Paths of sample1..6.jpg, or undefined when the package cannot be fetched (reason in photosSkip()). */
export function groupPhotos(): string[] | undefined {
  if (photos || failure) return photos;
  try {
    photos = samplePhotos();
  } catch (err) {
    failure = `face-api demo photos unavailable (npm pack failed): ${(err as Error).message.split('\n')[0]}`;
  }
  return photos;
}

export function photosSkip(): string | false {
  return groupPhotos() ? false : failure ?? 'photos unavailable';
}

export function groupPhoto(n: number): Buffer {
  const all = groupPhotos();
  if (!all) throw new Error(failure);
  return fs.readFileSync(all[n - 1]);
}

const cropCache = new Map<string, Buffer>();

/** A JPEG crop around one face; `transform` makes another "photo" of the same person. */
export async function faceCrop(name: CropName, transform?: (s: Sharp) => Sharp): Promise<Buffer> {
  const key = `${name}:${transform ? transform.toString() : ''}`;
  const hit = cropCache.get(key);
  if (hit) return hit;
  const c = CROPS[name];
  const src = groupPhoto(c.sample);
  const meta = await sharp(src).metadata();
  const left = Math.max(0, Math.min(meta.width! - CROP_SIDE, c.cx - CROP_SIDE / 2));
  const top = Math.max(0, Math.min(meta.height! - CROP_SIDE, c.cy - CROP_SIDE / 2));
  let s = sharp(src).extract({ left, top, width: CROP_SIDE, height: CROP_SIDE });
  if (transform) s = transform(sharp(await s.png().toBuffer()));
  const out = await s.jpeg({ quality: 92 }).toBuffer();
  cropCache.set(key, out);
  return out;
}

export const b64 = (b: Buffer) => b.toString('base64');

