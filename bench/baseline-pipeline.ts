// The benchmark baseline: the native engine's face pipeline re-done in TypeScript with onnxruntime-node and
// sharp, model for model and step for step (see native/core/*.cpp), so bench/engine.ts can show what the
// C++ engine buys. sharp decodes and does every crop/resize (extract + resize, extend for parts outside the
// image); JS loops normalise to NCHW Float32Arrays, decode the detector, run NMS, softmax, the Umeyama
// similarity, a bilinear alignment warp (on a sharp-shrunk region, like the native image pyramid), the
// quality measures and the two-network template. Never used by the service.
import fs from 'node:fs';
import path from 'node:path';

import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

import { templateNetworks } from '../src/engine/template-spec';
import { packageRoot } from '../src/package-root';
import type { Point, RgbImage } from '../src/engine/types';
import { landmarkPose } from './landmark-pose';

export type ModelId = 'detect' | 'landmark' | 'eye' | 'liveness' | 'feature' | 'mobilefacenet';
export type GraphLevel = 'all' | 'extended';
export const MODEL_IDS: ModelId[] = ['detect', 'landmark', 'eye', 'liveness', 'feature', 'mobilefacenet'];

interface ManifestModel {
  id: ModelId;
  file: string;
  input: { name: string; shape: number[]; channels: 'RGB' | 'BGR' | 'GREY'; mean: number[]; std: number[] };
}

export function manifestModels(): Record<ModelId, ManifestModel> {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'manifest.json'), 'utf8'));
  const out = {} as Record<ModelId, ManifestModel>;
  for (const m of manifest.models as ManifestModel[]) out[m.id] = m;
  return out;
}

/** The file the engine loads for the model: a template network's at the default precision (int8 where chosen). */
export function modelPath(id: ModelId): string {
  const file = templateNetworks().find((n) => n.id === id)?.file ?? manifestModels()[id].file;
  return path.join(packageRoot(), 'models', file);
}

/** Session options equivalent to the native engine's (native/core/ort/ort_session.cpp): N intra-op threads, one
 *  inter-op thread, sequential execution, no spin-waiting, denormals as zero; only the graph optimisation level
 *  varies. (ORT applies denormals-as-zero to its pool threads only: a single-threaded session computes on the
 *  calling thread, which onnxruntime-node gives no way to set; the engine sets it there, float_mode.h.) */
export function nativeEquivalentOptions(threads: number, level: GraphLevel): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: level,
    extra: { session: { intra_op: { allow_spinning: '0' }, set_denormal_as_zero: '1' } },
  };
}

/** The native engine's choice: ALL for every model (see face_engine.cpp). */
export const NATIVE_LEVELS: Record<ModelId, GraphLevel> = {
  detect: 'all', landmark: 'all', eye: 'all', liveness: 'all', feature: 'all', mobilefacenet: 'all',
};

export interface BaselineTimings {
  detect: number;
  landmarks: number;
  /** eyes + liveness. */
  attributes: number;
  eyes: number;
  liveness: number;
  /** Umeyama alignment, the warp to the 112x112 crop and the quality measures. */
  quality: number;
  /** Both networks (each crop's tensor and run, the mirror's too when flip-averaging; with threads=2 the two
   *  lanes' times, summed as the native does) and the template. */
  embed: number;
  total: number;
  /** Time inside session.run() per model (summed over runs: eye x2; feature, mobilefacenet x2 when flip-averaging). */
  runs: Record<ModelId, number>;
}

export interface BaselineFace {
  box: { x: number; y: number; width: number; height: number; score: number };
  landmarks: Float32Array;
  points5: Float32Array;
  pose: { yaw: number; pitch: number; roll: number };
  eyes: { left: number; right: number };
  liveness: number;
  brightness: number;
  sharpness: number;
  mouthOpenness: number;
  sunglasses: number;
  /** The template as the native's: fr_feature's part, then MobileFaceNet's (templateNets). */
  embedding: Float32Array;
}

export interface BaselineOptions {
  threads: number;
  /** Graph optimisation level per model (default NATIVE_LEVELS). */
  levels?: Partial<Record<ModelId, GraphLevel>>;
  minDetectionScore?: number;
  /** Flip-average the template as the native engine can (default false, the engine's default). */
  flipAverage?: boolean;
  /** Another file per model (a candidate form of the network: bench/int8-forms.ts). */
  files?: Partial<Record<ModelId, string | Uint8Array>>;
  /** Called with every input tensor fed to a model (calibration reads them: bench/int8-calibration.ts). */
  onInput?: (id: ModelId, input: Float32Array) => void;
}

export interface BaselinePipeline {
  readonly threads: number;
  readonly levels: Record<ModelId, GraphLevel>;
  analyze(image: RgbImage): Promise<{ faces: BaselineFace[]; timings: BaselineTimings }>;
  /** The last input tensor fed to each model (for graph-level measurements on real data). */
  readonly lastInputs: Partial<Record<ModelId, Float32Array>>;
  close(): Promise<void>;
}

// ---- constants mirrored from native/core --------------------------------------------------------------

const DET_W = 320, DET_H = 240, ANCHORS = 4420, NMS_IOU = 0.4;
const LM = 64, EYE = 24, LIVE = 128, LIVENESS_SCALE = 2.7;
const ALIGNED = 112;
const TEMPLATE_112: Array<[number, number]> = [
  [38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041],
];

/** sharp's resampling kernel for every crop/resize of the baseline. */
const KERNEL = sharp.kernel.linear;

// ---- image helpers (sharp) ------------------------------------------------------------------------------

interface Rect { x: number; y: number; w: number; h: number }

function rawSharp(img: RgbImage): ReturnType<typeof sharp> {
  const buf = Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength);
  return sharp(buf, { raw: { width: img.width, height: img.height, channels: 3 } });
}

/** The part of `img` under `rect` (may extend past the image: that part is `fill`) resized to outW x outH RGB. */
async function cropResize(img: RgbImage, rect: Rect, outW: number, outH: number,
                          fill: [number, number, number]): Promise<Uint8Array> {
  const left = Math.round(rect.x), top = Math.round(rect.y);
  const width = Math.max(1, Math.round(rect.x + rect.w) - left), height = Math.max(1, Math.round(rect.y + rect.h) - top);
  const il = Math.max(0, left), it = Math.max(0, top);
  const ir = Math.min(img.width, left + width), ib = Math.min(img.height, top + height);
  const ox0 = Math.round(((il - left) / width) * outW), ox1 = Math.round(((ir - left) / width) * outW);
  const oy0 = Math.round(((it - top) / height) * outH), oy1 = Math.round(((ib - top) / height) * outH);
  if (ir <= il || ib <= it || ox1 <= ox0 || oy1 <= oy0) {
    const out = new Uint8Array(outW * outH * 3);
    for (let i = 0; i < out.length; i += 3) out.set(fill, i);
    return out;
  }
  let pipeline = rawSharp(img)
    .extract({ left: il, top: it, width: ir - il, height: ib - it })
    .resize(ox1 - ox0, oy1 - oy0, { fit: 'fill', kernel: KERNEL });
  if (ox0 > 0 || oy0 > 0 || ox1 < outW || oy1 < outH) {
    pipeline = pipeline.extend({
      left: ox0, right: outW - ox1, top: oy0, bottom: outH - oy1,
      background: { r: fill[0], g: fill[1], b: fill[2] },
    });
  }
  const data = await pipeline.raw().toBuffer();
  return new Uint8Array(data.buffer, data.byteOffset, data.length);
}

/** Interleaved RGB -> planar NCHW float32, (v - mean) / std per plane; `bgr` puts blue in plane 0. A NaN
 *  sample (outside the image, see alignedCrop) stays 0, i.e. the mean, as in native warpToTensor. */
function rgbToTensor(rgb: Uint8Array | Float32Array, mean: number[], std: number[], bgr = false): Float32Array {
  const n = rgb.length / 3;
  const out = new Float32Array(rgb.length);
  const s0 = 1 / std[0], s1 = 1 / std[1], s2 = 1 / std[2];
  const [r, b] = bgr ? [2, 0] : [0, 2];
  for (let i = 0, j = 0; i < n; i++, j += 3) {
    if (Number.isNaN(rgb[j])) continue;
    out[i] = (rgb[j + r] - mean[0]) * s0;
    out[n + i] = (rgb[j + 1] - mean[1]) * s1;
    out[2 * n + i] = (rgb[j + b] - mean[2]) * s2;
  }
  return out;
}

/** Interleaved RGB -> one grey plane (BT.601 luma, as the native), / scale. */
function rgbToGreyTensor(rgb: Uint8Array, scale: number): Float32Array {
  const n = rgb.length / 3;
  const out = new Float32Array(n);
  const k = 1 / scale;
  for (let i = 0, j = 0; i < n; i++, j += 3) out[i] = (0.299 * rgb[j] + 0.587 * rgb[j + 1] + 0.114 * rgb[j + 2]) * k;
  return out;
}

function softmax(logits: ArrayLike<number>, n: number): Float64Array {
  let mx = -Infinity;
  for (let i = 0; i < n; i++) mx = Math.max(mx, logits[i]);
  const out = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += out[i] = Math.exp(logits[i] - mx);
  for (let i = 0; i < n; i++) out[i] /= sum;
  return out;
}


// ---- similarity (Umeyama without reflection, complex-number form as native) ------------------------------

/** Affine [a, b, c, d, e, f]: x' = a x + b y + c, y' = d x + e y + f. */
type Affine = [number, number, number, number, number, number];

export function estimateSimilarity(from: Array<[number, number]>, to: Array<[number, number]>): Affine {
  const n = from.length;
  let fx = 0, fy = 0, tx = 0, ty = 0;
  for (let i = 0; i < n; i++) { fx += from[i][0]; fy += from[i][1]; tx += to[i][0]; ty += to[i][1]; }
  fx /= n; fy /= n; tx /= n; ty /= n;
  let re = 0, im = 0, den = 0;
  for (let i = 0; i < n; i++) {
    const ax = from[i][0] - fx, ay = from[i][1] - fy, bx = to[i][0] - tx, by = to[i][1] - ty;
    re += ax * bx + ay * by;
    im += ax * by - ay * bx;
    den += ax * ax + ay * ay;
  }
  if (den <= 0) return [1, 0, 0, 0, 1, 0];
  const a = re / den, b = im / den;
  return [a, -b, tx - (a * fx - b * fy), b, a, ty - (b * fx + a * fy)];
}

function invert(m: Affine): Affine {
  const [a, b, c, d, e, f] = m;
  const det = a * e - b * d;
  if (det === 0) return [1, 0, 0, 0, 1, 0];
  const ra = e / det, rb = -b / det, rd = -d / det, re = a / det;
  return [ra, rb, -(ra * c + rb * f), rd, re, -(rd * c + re * f)];
}

interface AlignedCrop {
  /** Interleaved RGB bytes, outside the image black (as native warpToRgb): the quality measures' input. */
  rgb: Uint8Array;
  /** The same bilinear samples unrounded, NaN outside the image: both networks' input (cropTensor). */
  samples: Float32Array;
}

/**
 * The 112x112 aligned crop: dst->src affine `m`. Like the native pyramid, a scale >= 2 is first reduced by a
 * power of two (sharp resize of the region the crop reads), then sampled bilinearly in JS. Sampled once and
 * shared by the quality measures and both embedding networks, which differ only in normalisation.
 */
async function alignedCrop(img: RgbImage, m: Affine): Promise<AlignedCrop> {
  const scale = Math.sqrt(Math.abs(m[0] * m[4] - m[1] * m[3]));
  let factor = 1;
  while (scale >= 2 * factor && img.width / factor >= 4 && img.height / factor >= 4) factor *= 2;
  // Source footprint of the crop, one level-pixel of margin, clamped to the image.
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const [x, y] of [[-0.5, -0.5], [ALIGNED - 0.5, -0.5], [-0.5, ALIGNED - 0.5], [ALIGNED - 0.5, ALIGNED - 0.5]]) {
    const sx = m[0] * x + m[1] * y + m[2], sy = m[3] * x + m[4] * y + m[5];
    minX = Math.min(minX, sx); maxX = Math.max(maxX, sx); minY = Math.min(minY, sy); maxY = Math.max(maxY, sy);
  }
  const left = Math.max(0, Math.floor(minX) - factor), top = Math.max(0, Math.floor(minY) - factor);
  const right = Math.min(img.width, Math.ceil(maxX) + factor), bottom = Math.min(img.height, Math.ceil(maxY) + factor);
  const rgb = new Uint8Array(ALIGNED * ALIGNED * 3);
  const samples = new Float32Array(ALIGNED * ALIGNED * 3).fill(NaN);
  if (right <= left || bottom <= top) return { rgb, samples };
  const lw = Math.max(1, Math.round((right - left) / factor)), lh = Math.max(1, Math.round((bottom - top) / factor));
  let level: Uint8Array;
  if (factor === 1) {
    level = new Uint8Array(lw * lh * 3);
    for (let y = 0; y < lh; y++) {
      const from = ((top + y) * img.width + left) * 3;
      level.set(img.data.subarray(from, from + lw * 3), y * lw * 3);
    }
  } else {
    const buf = await rawSharp(img).extract({ left, top, width: right - left, height: bottom - top })
      .resize(lw, lh, { fit: 'fill', kernel: KERNEL }).raw().toBuffer();
    level = new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
  }
  // Source pixel centre sx -> level pixel (sx - left + 0.5) * kx - 0.5 (pixel edges matched).
  const kx = lw / (right - left), ky = lh / (bottom - top);
  const stride = lw * 3;
  for (let y = 0; y < ALIGNED; y++) {
    for (let x = 0; x < ALIGNED; x++) {
      const sx = (m[0] * x + m[1] * y + m[2] - left + 0.5) * kx - 0.5;
      const sy = (m[3] * x + m[4] * y + m[5] - top + 0.5) * ky - 0.5;
      if (sx < -0.5 || sy < -0.5 || sx > lw - 0.5 || sy > lh - 0.5) continue;
      const cx = Math.min(Math.max(sx, 0), lw - 1), cy = Math.min(Math.max(sy, 0), lh - 1);
      const x0 = Math.floor(cx), y0 = Math.floor(cy);
      const x1 = Math.min(x0 + 1, lw - 1), y1 = Math.min(y0 + 1, lh - 1);
      const fx = cx - x0, fy = cy - y0;
      const p00 = y0 * stride + x0 * 3, p01 = y0 * stride + x1 * 3, p10 = y1 * stride + x0 * 3, p11 = y1 * stride + x1 * 3;
      const o = y * ALIGNED + x;
      for (let c = 0; c < 3; c++) {
        const t = level[p00 + c] + (level[p01 + c] - level[p00 + c]) * fx;
        const b = level[p10 + c] + (level[p11 + c] - level[p10 + c]) * fx;
        const v = t + (b - t) * fy;
        rgb[o * 3 + c] = Math.round(Math.min(255, v));
        samples[o * 3 + c] = v;
      }
    }
  }
  return { rgb, samples };
}

/** The tensor of the horizontally mirrored crop. */
function mirrorTensor(t: Float32Array, size: number): Float32Array {
  const out = new Float32Array(t.length);
  for (let row = 0; row < t.length / size; row++) {
    const base = row * size;
    for (let x = 0; x < size; x++) out[base + x] = t[base + size - 1 - x];
  }
  return out;
}

/** A network's input tensor of the aligned crop, normalised as the manifest says: fr_feature takes BGR planes,
 *  MobileFaceNet RGB, each with its own mean and std (as native/core/face/face_embedder.cpp). */
function cropTensor(crop: AlignedCrop, input: ManifestModel['input']): Float32Array {
  return rgbToTensor(crop.samples, input.mean, input.std, input.channels === 'BGR');
}

// ---- quality (port of native/core/face/face_quality.cpp) ------------------------------------------------------

type Region = [number, number, number, number];
const FACE: Region = [24, 36, 88, 104], LEFT_EYE: Region = [28, 45, 49, 59], RIGHT_EYE: Region = [63, 45, 84, 59];
const LEFT_CHEEK: Region = [26, 66, 44, 82], RIGHT_CHEEK: Region = [68, 66, 86, 82], NOSE: Region = [50, 56, 62, 72];

function meanOver(grey: Float32Array, [x0, y0, x1, y1]: Region): number {
  let sum = 0;
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) sum += grey[y * ALIGNED + x];
  return sum / ((x1 - x0) * (y1 - y0));
}

function laplacianVariance(g: Float32Array, w: number, h: number): number {
  let sum = 0, sumSq = 0, n = 0;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const i = y * w + x;
      const l = g[i - 1] + g[i + 1] + g[i - w] + g[i + w] - 4 * g[i];
      sum += l; sumSq += l * l; n++;
    }
  }
  const mean = sum / n;
  return sumSq / n - mean * mean;
}

function measureQuality(rgb: Uint8Array, lm: Float32Array):
    { brightness: number; sharpness: number; mouthOpenness: number; sunglasses: number } {
  const grey = new Float32Array(ALIGNED * ALIGNED);
  for (let i = 0; i < grey.length; i++) grey[i] = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
  const brightness = meanOver(grey, FACE);
  const [fx0, fy0, fx1, fy1] = FACE, rw = fx1 - fx0, rh = fy1 - fy0;
  const region = new Float32Array(rw * rh);
  for (let y = 0; y < rh; y++) region.set(grey.subarray((fy0 + y) * ALIGNED + fx0, (fy0 + y) * ALIGNED + fx1), y * rw);
  const sharpness = laplacianVariance(region, rw, rh);
  const d = (i: number, j: number) => Math.hypot(lm[2 * i] - lm[2 * j], lm[2 * i + 1] - lm[2 * j + 1]);
  const mouthOpenness = ((d(61, 67) + d(62, 66) + d(63, 65)) / 3) / Math.max(1, d(48, 54));
  // As the native: 90th percentile of the eye regions' luma over the median luma of cheeks and nose.
  const pixels = (regions: number[][]) => {
    const v: number[] = [];
    for (const [x0, y0, x1, y1] of regions) for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) v.push(grey[y * ALIGNED + x]);
    return v.sort((a, b) => a - b);
  };
  const eyes = pixels([LEFT_EYE, RIGHT_EYE]), skin = pixels([LEFT_CHEEK, RIGHT_CHEEK, NOSE]);
  const median = skin[skin.length >> 1], p90 = eyes[Math.floor(eyes.length * 0.9)];
  const ratio = median > 1 ? p90 / median : 1;
  return { brightness, sharpness, mouthOpenness, sunglasses: 1 / (1 + Math.exp((ratio - 0.58) * 25)) };
}

// ---- the pipeline ---------------------------------------------------------------------------------------

/** A session of the model's file (default: the one the engine loads), or of another file or model bytes. */
export async function createSession(id: ModelId, threads: number, level: GraphLevel, file: string | Uint8Array = modelPath(id)): Promise<ort.InferenceSession> {
  const options = nativeEquivalentOptions(threads, level);
  return typeof file === 'string' ? ort.InferenceSession.create(file, options) : ort.InferenceSession.create(file, options);
}

/** The template's networks (src/engine/template-spec.ts), each with sqrt(weight / sum of weights), as native
 *  FaceEmbedder::load. */
export function templateNets(): Array<{ id: ModelId; size: number; scale: number }> {
  const networks = templateNetworks();
  const total = networks.reduce((s, n) => s + n.weight, 0);
  return networks.map(({ id, size, weight }) => ({ id: id as ModelId, size, scale: Math.sqrt(weight / total) }));
}

/** The template: per network, the crop's (plus the mirror's) embedding, L2-normalised and scaled by
 *  sqrt(weight); the parts concatenated in `nets` order (native FaceEmbedder::combine). */
function combineTemplate(nets: ReturnType<typeof templateNets>, passes: Array<[Float32Array, Float32Array | undefined]>): Float32Array {
  const out = new Float32Array(nets.reduce((s, n) => s + n.size, 0));
  let offset = 0;
  nets.forEach(({ size, scale }, k) => {
    const [first, second] = passes[k];
    let n2 = 0;
    for (let i = 0; i < size; i++) { const v = first[i] + (second ? second[i] : 0); out[offset + i] = v; n2 += v * v; }
    const f = n2 > 0 ? scale / Math.sqrt(n2) : 0;
    for (let i = 0; i < size; i++) out[offset + i] *= f;
    offset += size;
  });
  return out;
}

export async function createBaseline(options: BaselineOptions): Promise<BaselinePipeline> {
  const models = manifestModels();
  const nets = templateNets();
  if (nets.length !== 2) throw new Error(`baseline: the lanes expect a template of 2 networks, the manifest names ${nets.length}`);
  const levels = { ...NATIVE_LEVELS, ...(options.levels ?? {}) };
  const sessions = {} as Record<ModelId, ort.InferenceSession>;
  for (const id of MODEL_IDS) sessions[id] = await createSession(id, options.threads, levels[id], options.files?.[id]);
  const minScore = options.minDetectionScore ?? 0.85;
  const lastInputs: Partial<Record<ModelId, Float32Array>> = {};

  async function run(id: ModelId, input: Float32Array, runs: Record<ModelId, number>): Promise<Float32Array[]> {
    lastInputs[id] = input;
    options.onInput?.(id, input);
    const session = sessions[id];
    const t0 = performance.now();
    const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', input, models[id].input.shape) });
    runs[id] += performance.now() - t0;
    return session.outputNames.map((n) => out[n].data as Float32Array);
  }

  const flip = options.flipAverage ?? false;
  async function analyze(img: RgbImage): Promise<{ faces: BaselineFace[]; timings: BaselineTimings }> {
    const runs: Record<ModelId, number> = { detect: 0, landmark: 0, eye: 0, liveness: 0, feature: 0, mobilefacenet: 0 };
    const t: BaselineTimings = { detect: 0, landmarks: 0, attributes: 0, eyes: 0, liveness: 0, quality: 0, embed: 0, total: 0, runs };
    const start = performance.now();
    let last = start;
    const lap = (key: 'detect' | 'landmarks' | 'eyes' | 'liveness' | 'quality' | 'embed') => {
      const now = performance.now();
      t[key] += now - last;
      last = now;
    };

    // Detect: letterbox to 320x240 (border = the mean, tensor 0), threshold, NMS, square boxes.
    const scale = Math.max(img.width / DET_W, img.height / DET_H);
    const frameW = DET_W * scale, frameH = DET_H * scale;
    const originX = (img.width - frameW) / 2, originY = (img.height - frameH) / 2;
    const det = models.detect.input;
    const detRgb = await cropResize(img, { x: originX, y: originY, w: frameW, h: frameH }, DET_W, DET_H, [127, 127, 127]);
    const [scores, boxes] = await run('detect', rgbToTensor(detRgb, det.mean, det.std), runs);
    const candidates: Array<{ x1: number; y1: number; x2: number; y2: number; score: number }> = [];
    for (let i = 0; i < ANCHORS; i++) {
      const score = scores[2 * i + 1];
      if (score < minScore) continue;
      const c = {
        x1: originX + boxes[4 * i] * frameW, y1: originY + boxes[4 * i + 1] * frameH,
        x2: originX + boxes[4 * i + 2] * frameW, y2: originY + boxes[4 * i + 3] * frameH, score,
      };
      if (c.x2 > c.x1 && c.y2 > c.y1) candidates.push(c);
    }
    candidates.sort((a, b) => b.score - a.score);
    const iou = (a: typeof candidates[0], b: typeof candidates[0]) => {
      const w = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1), h = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
      if (w <= 0 || h <= 0) return 0;
      const inter = w * h;
      return inter / ((a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter);
    };
    const kept: typeof candidates = [];
    for (const c of candidates) if (!kept.some((k) => iou(c, k) > NMS_IOU)) kept.push(c);
    const squares = kept.map((k) => {
      const side = k.y2 - k.y1, cx = (k.x1 + k.x2) / 2, cy = (k.y1 + k.y2) / 2;
      return { x: cx - side / 2, y: cy - side / 2, size: side, score: k.score };
    }).sort((a, b) => b.size - a.size);
    lap('detect');

    const faces: BaselineFace[] = [];
    for (const b of squares) {
      // Landmarks: grey 64x64 of the square box, /256.
      const lmRgb = await cropResize(img, { x: b.x, y: b.y, w: b.size, h: b.size }, LM, LM, [0, 0, 0]);
      const [lmOut] = await run('landmark', rgbToGreyTensor(lmRgb, models.landmark.input.std[0]), runs);
      const landmarks = new Float32Array(136);
      for (let i = 0; i < 68; i++) {
        landmarks[2 * i] = b.x + lmOut[2 * i] * b.size;
        landmarks[2 * i + 1] = b.y + lmOut[2 * i + 1] * b.size;
      }
      const meanOf = (idx: number[]): [number, number] => [
        idx.reduce((s, i) => s + landmarks[2 * i], 0) / idx.length,
        idx.reduce((s, i) => s + landmarks[2 * i + 1], 0) / idx.length,
      ];
      const p5: Array<[number, number]> = [
        meanOf([37, 38, 40, 41]), meanOf([43, 44, 46, 47]), meanOf([30]), meanOf([48, 60]), meanOf([54, 64]),
      ];
      const points: Point[] = [];
      for (let i = 0; i < 68; i++) points.push({ x: landmarks[2 * i], y: landmarks[2 * i + 1] });
      const pose = landmarkPose(points);
      lap('landmarks');

      // The same two lanes as the native engine: with threads=2 they run concurrently (onnxruntime-node runs
      // sessions off the main thread), with threads=1 one after the other.
      const timed = async <T>(key: 'eyes' | 'liveness' | 'quality' | 'embed', fn: () => Promise<T>): Promise<T> => {
        const t0 = performance.now();
        const r = await fn();
        t[key] += performance.now() - t0;
        return r;
      };
      const toSrc = invert(estimateSimilarity(p5, TEMPLATE_112));
      const crop = await timed('quality', () => alignedCrop(img, toSrc));
      // Liveness: 2.7x the box, shrunk to fit and shifted inside the image, 128x128 raw 0..255.
      const livenessScore = () => timed('liveness', async () => {
        const side = Math.min(b.size * LIVENESS_SCALE, img.width, img.height);
        const lcx = b.x + b.size / 2, lcy = b.y + b.size / 2;
        const lx = Math.min(Math.max(lcx - side / 2, 0), img.width - side);
        const ly = Math.min(Math.max(lcy - side / 2, 0), img.height - side);
        const liveRgb = await cropResize(img, { x: lx, y: ly, w: side, h: side }, LIVE, LIVE, [0, 0, 0]);
        const [liveOut] = await run('liveness', rgbToTensor(liveRgb, models.liveness.input.mean, models.liveness.input.std, true), runs);
        return softmax(liveOut, 3)[0];
      });
      // Eyes: grey 24x24 around each eye contour, 1.6x its corner-to-corner width, /255; softmax class 1.
      const eyeStates = () => timed('eyes', async () => {
        const open: number[] = [];
        for (const first of [36, 42]) {
          let cx = 0, cy = 0;
          for (const i of [1, 2, 4, 5]) { cx += landmarks[2 * (first + i)] / 4; cy += landmarks[2 * (first + i) + 1] / 4; }
          const side = Math.max(2, 1.6 * Math.hypot(landmarks[2 * (first + 3)] - landmarks[2 * first],
            landmarks[2 * (first + 3) + 1] - landmarks[2 * first + 1]));
          const eyeRgb = await cropResize(img, { x: cx - side / 2, y: cy - side / 2, w: side, h: side }, EYE, EYE, [0, 0, 0]);
          const [eyeOut] = await run('eye', rgbToGreyTensor(eyeRgb, models.eye.input.std[0]), runs);
          open.push(softmax(eyeOut, 2)[1]);
        }
        return open;
      });
      // One network's passes: the crop, then its mirror when flip-averaging (they stay in the network's lane).
      const embedPasses = (net: number) => timed('embed', async (): Promise<[Float32Array, Float32Array | undefined]> => {
        const { id } = nets[net];
        const tensor = cropTensor(crop, models[id].input);
        const [e1] = await run(id, tensor, runs);
        const e2 = flip ? (await run(id, mirrorTensor(tensor, ALIGNED), runs))[0] : undefined;
        return [e1, e2];
      });
      // Lane A: the first network (fr_feature), then quality. Lane B: the second (MobileFaceNet), then
      // liveness, then the eyes. As native/core/face/face_engine.cpp.
      const laneA = async () => {
        const passes = await embedPasses(0);
        const q = await timed('quality', async () => measureQuality(crop.rgb, landmarks));
        return { passes, q };
      };
      const laneB = async () => {
        const passes = await embedPasses(1);
        const liveness = await livenessScore();
        const eyeOpen = await eyeStates();
        return { passes, liveness, eyeOpen };
      };
      const [a, bLane] = options.threads > 1
        ? await Promise.all([laneA(), laneB()])
        : [await laneA(), await laneB()];
      const { q } = a;
      const { liveness, eyeOpen } = bLane;
      const embedding = await timed('embed', async () => combineTemplate(nets, [a.passes, bLane.passes]));

      faces.push({
        box: { x: b.x, y: b.y, width: b.size, height: b.size, score: b.score },
        landmarks, points5: Float32Array.from(p5.flat()), pose,
        eyes: { left: eyeOpen[0], right: eyeOpen[1] }, liveness, ...q, embedding,
      });
    }
    t.attributes = t.eyes + t.liveness;
    t.total = performance.now() - start;
    return { faces, timings: t };
  }

  return {
    threads: options.threads,
    levels,
    analyze,
    lastInputs,
    async close() {
      for (const id of MODEL_IDS) await sessions[id].release();
    },
  };
}
