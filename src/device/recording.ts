// Recordings for the replay source. A face-check recording is a folder with recording.txt (size,
// intrinsics, then one "frame <timestamp_us> <colour.ppm> <depth.pgm | ->" line per frame), binary PPM
// colour frames and 16-bit PGM depth frames in millimetres registered to colour (docs/device.md). A plain
// folder of colour images is converted once into a colour-only recording in the cache.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

import { cacheDir } from './cache-dir';

const IMAGE_EXT = /\.(jpe?g|png|webp|bmp|tiff?|ppm)$/i;

export function isRecording(dir: string): boolean {
  return fs.existsSync(path.join(dir, 'recording.txt'));
}

/**
 * A colour-only recording of the images of `folder` (sorted by name, all resized to the first one's
 * size), played at `fps`. Written once into the cache and reused while the folder is unchanged.
 */
export async function imageFolderRecording(folder: string, fps = 30): Promise<string> {
  const files = fs.readdirSync(folder).filter((f) => IMAGE_EXT.test(f)).sort();
  if (!files.length) throw new Error(`${folder}: neither a recording (recording.txt) nor a folder of images`);
  const stamp = files.map((f) => `${f}:${fs.statSync(path.join(folder, f)).mtimeMs}`).join('|');
  const key = crypto.createHash('sha256').update(`${path.resolve(folder)}|${fps}|${stamp}`).digest('hex').slice(0, 16);
  const out = path.join(cacheDir(), `replay-${key}`);
  if (isRecording(out)) return out;
  const tmp = `${out}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  let width = 0;
  let height = 0;
  const lines: string[] = [];
  for (let i = 0; i < files.length; i++) {
    let img = sharp(path.join(folder, files[i])).rotate().removeAlpha().toColourspace('srgb');
    if (i > 0) img = img.resize(width, height, { fit: 'fill' });
    const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
    if (i === 0) { width = info.width; height = info.height; }
    const name = `${String(i).padStart(6, '0')}.ppm`;
    fs.writeFileSync(path.join(tmp, name), Buffer.concat([Buffer.from(`P6 ${width} ${height} 255\n`), data]));
    lines.push(`frame ${Math.round((i * 1e6) / fps)} ${name} -`);
  }
  // Intrinsics of a typical 60-degree colour camera of that width (colour-only: used for nothing metric).
  const f = (width / 2) / Math.tan((30 * Math.PI) / 180);
  fs.writeFileSync(path.join(tmp, 'recording.txt'), [
    'face-check-recording 1', `size ${width} ${height}`,
    `intrinsics ${f.toFixed(3)} ${f.toFixed(3)} ${((width - 1) / 2).toFixed(1)} ${((height - 1) / 2).toFixed(1)}`,
    ...lines, '',
  ].join('\n'));
  fs.rmSync(out, { recursive: true, force: true });
  fs.renameSync(tmp, out);
  return out;
}

/** The recording to replay for [camera.replay] path: itself, or its images converted. */
export async function replayRecording(replayPath: string, fps = 30): Promise<string> {
  if (!fs.existsSync(replayPath)) throw new Error(`[camera.replay] path: ${replayPath} does not exist`);
  return isRecording(replayPath) ? replayPath : imageFolderRecording(replayPath, fps);
}
