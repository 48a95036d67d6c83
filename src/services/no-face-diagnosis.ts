// Why an enrolment photo shows no face. "No face" (F_002) gives a user nothing to act on when the face is
// there but too dark, too blurred or tilted too far for the detector; so before answering F_002 the photo is
// measured as a whole and searched again on rotated copies:
//   1 an image smaller than min_face_size, or a featureless one (a blank wall, a lens cap): F_002 at once;
//   2 the centre of the image too dark or too bright: F_006;  3 the centre too blurred: F_007;
//   4 a face found on a rotated copy, with a roll beyond max_roll: F_008 (the roll in the reason);
//   5 otherwise F_002.
// The image measures come first because they cost a few milliseconds while each rotation is a detector
// run; a dark or blurred photo also hides a rolled face from the detector, so the rotations would not help.
// The whole image is not the face: its bounds are keys of their own ([quality] min_image_brightness,
// max_image_brightness, min_image_sharpness), chosen on bench:quality; docs/quality.md has the numbers.
import sharp from 'sharp';

import type { QualityConfig } from '../config/types';
import type { FaceAnalysis, FaceEngine, Point, RgbImage } from '../engine/types';
import type { ErrorName } from '../errors';
import { operationOptions } from './operation-stages';

export interface NoFaceDiagnosis {
  error: ErrorName;
  /** For the log only (never sent to the client). */
  reason: string;
  /** The rotation (degrees, clockwise) of the copy a face was found on, and that face's roll in the photo. */
  found?: { rotation: number; roll: number };
}

export interface ImageMeasures {
  /** Mean luma 0..255 of the centre. */
  brightness: number;
  /** Standard deviation of that luma: near 0 for a featureless image. */
  contrast: number;
  /** Variance of the 4-neighbour Laplacian of the centre's luma at MEASURE_SIDE pixels. */
  sharpness: number;
}

/** The centre measured: the middle half of each side, where an enrolment photo has its face. */
const CENTRE = 0.5;
/** The centre is area-averaged down to at most this many pixels on its long side (the aligned crop's
 *  size), so sharpness means the same on a 400 px and a 7,000 px photo; smaller centres are not enlarged. */
export const MEASURE_SIDE = 112;
/** Luma standard deviation below this is a featureless image (no face can hide in it): a plain JPEG wall
 *  reads 0-1, the darkest generated variant of a photo (x0.12) reads 2.7 or more. */
export const MIN_CONTRAST = 1.5;
/** Detection runs on a copy at most this large: the detector sees 320x240 anyway. */
const SEARCH_SIDE = 640;
/** Rotations tried, in this order, until a face is found. Positive = clockwise (sharp's sense). */
export const SEARCH_ROTATIONS: readonly number[] = Object.freeze([-30, 30, -60, 60, 90, -90, 180]);
/** The padding of a rotated copy: the detector's letterbox value, which reads as no content. */
const PAD = { r: 127, g: 127, b: 127 };

/** A measure for a log reason: whole numbers as they are, others to one decimal. */
export const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** Brightness, contrast and sharpness of the image's centre, in the luma the engine measures faces with. */
export function measureImage(img: RgbImage): ImageMeasures {
  const cw = Math.max(1, Math.round(img.width * CENTRE)), ch = Math.max(1, Math.round(img.height * CENTRE));
  const x0 = Math.floor((img.width - cw) / 2), y0 = Math.floor((img.height - ch) / 2);
  const k = Math.min(1, MEASURE_SIDE / Math.max(cw, ch));
  const ow = Math.max(1, Math.round(cw * k)), oh = Math.max(1, Math.round(ch * k));
  // Area average into ow x oh bins; a huge photo is sampled every `step` pixels (still >= 4 per bin side).
  const step = Math.max(1, Math.floor(1 / k / 4));
  const sum = new Float64Array(ow * oh), count = new Uint32Array(ow * oh);
  const d = img.data;
  for (let y = 0; y < ch; y += step) {
    const by = Math.min(oh - 1, Math.floor((y * oh) / ch)) * ow;
    let i = ((y0 + y) * img.width + x0) * 3;
    for (let x = 0; x < cw; x += step, i += 3 * step) {
      const b = by + Math.min(ow - 1, Math.floor((x * ow) / cw));
      sum[b] += 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
      count[b]++;
    }
  }
  const grey = new Float64Array(ow * oh);
  let s = 0, sq = 0;
  for (let b = 0; b < grey.length; b++) {
    grey[b] = count[b] ? sum[b] / count[b] : 0;
    s += grey[b];
    sq += grey[b] * grey[b];
  }
  const mean = s / grey.length;
  const contrast = Math.sqrt(Math.max(0, sq / grey.length - mean * mean));
  return { brightness: mean, contrast, sharpness: laplacianVariance(grey, ow, oh) };
}

/** As the engine computes it for faces (native/core/face/image_ops.cpp). */
function laplacianVariance(g: Float64Array, w: number, h: number): number {
  if (w < 3 || h < 3) return 0;
  let s = 0, sq = 0, n = 0;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const i = y * w + x;
      const l = g[i - 1] + g[i + 1] + g[i - w] + g[i + w] - 4 * g[i];
      s += l;
      sq += l * l;
      n++;
    }
  }
  const mean = s / n;
  return sq / n - mean * mean;
}

/** F_006/F_007 from the image measures, or undefined when the image looks usable. */
export function diagnoseMeasures(m: ImageMeasures, bounds: QualityConfig): NoFaceDiagnosis | undefined {
  const what = `no face detected; image centre brightness ${fmt(m.brightness)}, sharpness ${fmt(m.sharpness)}`;
  if (m.brightness < bounds.min_image_brightness || m.brightness > bounds.max_image_brightness) {
    return { error: 'BadBrightness', reason: `${what}: brightness outside ${fmt(bounds.min_image_brightness)}..${fmt(bounds.max_image_brightness)}` };
  }
  if (m.sharpness < bounds.min_image_sharpness) {
    return { error: 'BadSharpness', reason: `${what}: sharpness below ${fmt(bounds.min_image_sharpness)}` };
  }
  return undefined;
}

/** The degrees in (-180, 180]. */
export function normaliseAngle(a: number): number {
  const r = ((a % 360) + 360) % 360;
  return r > 180 ? r - 360 : r;
}

/** A copy of `img` turned clockwise by `angle`, with the map from its pixels back to the photo's. */
export interface TurnedCopy extends RgbImage {
  toPhoto(p: Point): Point;
}

/** A copy of `img` at most SEARCH_SIDE on its long side, rotated clockwise by each angle in turn. */
export async function rotatedCopies(img: RgbImage): Promise<(angle: number) => Promise<TurnedCopy>> {
  const raw = (data: Uint8Array, width: number, height: number) =>
    sharp(Buffer.from(data.buffer, data.byteOffset, data.byteLength), { raw: { width, height, channels: 3 } });
  const small = await raw(img.data, img.width, img.height)
    .resize(SEARCH_SIDE, SEARCH_SIDE, { fit: 'inside', withoutEnlargement: true }).raw().toBuffer({ resolveWithObject: true });
  const sw = small.info.width, sh = small.info.height, kx = img.width / sw, ky = img.height / sh;
  return async (angle) => {
    const { data, info } = await raw(small.data, sw, sh)
      .rotate(angle, { background: PAD }).raw().toBuffer({ resolveWithObject: true });
    // The turn is about the centres (the canvas grows around the copy): undo it, then the reduction.
    const c = Math.cos((angle * Math.PI) / 180), s = Math.sin((angle * Math.PI) / 180);
    const toPhoto = (p: Point): Point => {
      const x = p.x - info.width / 2, y = p.y - info.height / 2;
      return { x: (x * c + y * s + sw / 2) * kx, y: (-x * s + y * c + sh / 2) * ky };
    };
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height, toPhoto };
  };
}

export type Detect = (img: RgbImage) => Promise<FaceAnalysis[]>;

/** The enrolment detector as the diagnosis uses it: boxes, every face's landmarks and pose, the analysed face's quality. */
export function detectorOf(engine: Pick<FaceEngine, 'analyze'>): Detect {
  return (img) => engine.analyze(img, operationOptions('re-detect'));
}

/**
 * The code to answer for an enrolment photo on which the detector found no face. Costs one pass over the
 * image and, only for a well exposed and sharp image, up to SEARCH_ROTATIONS.length detector runs on a
 * reduced copy.
 */
export async function diagnoseNoFace(img: RgbImage, bounds: QualityConfig, detect: Detect): Promise<NoFaceDiagnosis> {
  if (Math.min(img.width, img.height) < bounds.min_face_size) {
    return { error: 'NoFace', reason: `no face detected; the image (${img.width}x${img.height}) is smaller than a face may be` };
  }
  const m = measureImage(img);
  if (m.contrast < MIN_CONTRAST) return { error: 'NoFace', reason: `no face detected; featureless image (contrast ${fmt(m.contrast)})` };
  const measured = diagnoseMeasures(m, bounds);
  if (measured) return measured;

  const rotate = await rotatedCopies(img);
  for (const angle of SEARCH_ROTATIONS) {
    const [face] = await detect(await rotate(angle));
    if (!face) continue;
    // The copy turned the face by `angle`: the photo's own roll is what remains minus the turn.
    const roll = normaliseAngle(face.pose.roll - angle);
    if (Math.abs(roll) > bounds.max_roll) {
      return {
        error: 'WrongFaceRoll', found: { rotation: angle, roll },
        reason: `no face detected upright; a face found after rotating ${angle}°: roll ${fmt(roll)} beyond ±${fmt(bounds.max_roll)}`,
      };
    }
    // A face the rotation found level is one the detector missed for another reason: nothing to tell.
    return { error: 'NoFace', found: { rotation: angle, roll }, reason: `no face detected upright; a face found after rotating ${angle}° has roll ${fmt(roll)}` };
  }
  return { error: 'NoFace', reason: 'no face detected, also not on rotated copies' };
}
