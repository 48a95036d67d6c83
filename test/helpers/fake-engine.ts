// A deterministic stand-in for the native engine, for API tests that must not depend on models.
// Test photos carry a marker in their first pixel row (lossless PNG) that tells the fake what to "see":
//   p0 = [0xFA, 0xCE, faceCount]         p1 = [idHi, idLo, variant]
//   p2 = [sizeHi, sizeLo, cosine*255]    p3 = [fault, 0, 0]            p4 = [secondFacePercent, 0, 0]
// Identity id gives a fixed random unit template; variant v>0 mixes in noise v so that the cosine to the
// identity's template is exactly p2.B/255. Photos without the marker: one face, identity from a hash.
import crypto from 'node:crypto';
import sharp from 'sharp';
import type { AnalyzeOptions, FaceAnalysis, FaceEngine, RgbImage } from '../../src/engine/types';
import type { StageTimings } from '../../src/native';
import { SimilarityScale, roundSimilarity } from '../../src/matching/similarity-scale';
import { templateModelId, templateSize } from '../../src/engine/template-spec';

// The installed models' real identifier and template size: storage keys and ranges are exercised with the
// lengths production uses (a 2-character stand-in once hid a range bug that only long ids trigger).
export const FAKE_MODEL_ID = templateModelId();
export const DIM = templateSize();
/** Ids of other real-length models, for tests of templates left by a model change. */
export const OTHER_MODEL_IDS = [templateModelId(undefined, true), `${FAKE_MODEL_ID}+old`, `previous-${FAKE_MODEL_ID}`] as const;

/** The enrolment criterion a fake photo fails (the F_ number). */
export type Fault = 0 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10;

export interface FakePhoto {
  identity: number;
  /** 0 = the identity's exact template; else a variant with cosine `cosine` to it. */
  variant?: number;
  cosine?: number;
  faces?: number;
  /** Largest face size in px (default 200). */
  faceSize?: number;
  /** Other faces' size in percent of the largest (default 100). */
  secondFacePercent?: number;
  fault?: Fault;
  width?: number;
  height?: number;
}

/** A PNG the fake engine reads as described. */
export async function fakePhoto(p: FakePhoto): Promise<Buffer> {
  const width = p.width ?? 64;
  const height = p.height ?? 64;
  const data = Buffer.alloc(width * height * 3);
  // Background varies with the parameters, so distinct photos are distinct files.
  const seed = crypto.createHash('sha256').update(JSON.stringify(p)).digest();
  for (let i = 0; i < data.length; i++) data[i] = seed[i % seed.length];
  const size = p.faceSize ?? 200;
  const px = (i: number, rgb: number[]) => data.set(rgb, i * 3);
  px(0, [0xfa, 0xce, p.faces ?? 1]);
  px(1, [(p.identity >> 8) & 255, p.identity & 255, p.variant ?? 0]);
  px(2, [(size >> 8) & 255, size & 255, Math.round((p.cosine ?? 1) * 255)]);
  px(3, [p.fault ?? 0, 0, 0]);
  px(4, [p.secondFacePercent ?? 100, 0, 0]);
  return sharp(data, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** The similarity percent (two decimals, as the service reports it) of the fake cosine k/255. */
export function percentAtStep(k: number, scale = new SimilarityScale()): number {
  return roundSimilarity(scale.toSimilarity(k / 255));
}

/**
 * The smallest k (0..255) whose fake cosine k/255 reaches `percent` on the similarity scale, so that a photo
 * with cosine k/255 is just at a threshold and (k-1)/255 just below it, whatever the scale's calibration.
 */
export function stepReaching(percent: number, scale = new SimilarityScale()): number {
  let k = Math.max(0, Math.floor(scale.toCosineFloor(percent) * 255) - 1);
  while (k <= 255 && percentAtStep(k, scale) < percent) k++;
  if (k > 255 || k === 0) throw new Error(`no fake cosine step is just at ${percent} %`);
  return k;
}

export async function fakePhotoB64(p: FakePhoto): Promise<string> {
  return (await fakePhoto(p)).toString('base64');
}

export class FakeEngine implements FaceEngine {
  readonly modelId: string;
  readonly templateSize = DIM;
  calls = 0;
  private closed = false;
  /** Set to make analyze reject (engine failure -> 500). */
  failWith?: Error;
  /** Each analysis takes 0..jitterMs ms, finishing out of order as a real engine under load does. */
  jitterMs = 0;

  constructor(modelId = FAKE_MODEL_ID) {
    this.modelId = modelId;
  }

  async analyze(image: RgbImage, options: AnalyzeOptions = {}): Promise<FaceAnalysis[]> {
    if (this.closed) throw new Error('engine closed');
    this.calls++;
    if (this.failWith) throw this.failWith;
    if (this.jitterMs > 0) await new Promise((r) => setTimeout(r, Math.random() * this.jitterMs));
    const d = image.data;
    const marked = d[0] === 0xfa && d[1] === 0xce;
    const count = marked ? d[2] : 1;
    const identity = marked ? (d[3] << 8) | d[4] : hashIdentity(d);
    const variant = marked ? d[5] : 0;
    const size = marked ? ((d[6] << 8) | d[7]) : Math.round(Math.min(image.width, image.height) / 2);
    const cosine = marked ? d[8] / 255 : 1;
    const fault = (marked ? d[9] : 0) as Fault;
    const secondPercent = marked ? d[12] : 100;
    const faces: FaceAnalysis[] = [];
    const embed = options.embed ?? true;
    const maxFaces = options.maxFaces ?? 64;
    for (let i = 0; i < Math.min(count, 64); i++) {
      const faceSize = i === 0 ? size : Math.max(1, Math.round((size * secondPercent) / 100) - (i - 1));
      const analyzed = i < maxFaces;
      const template = i === 0 ? templateFor(identity, variant, cosine) : templateFor(identity + 1000 * i, 0, 1);
      faces.push(face(faceSize, i === 0 ? fault : 0, embed && analyzed ? template : new Float32Array(0), analyzed));
    }
    return faces;
  }

  async profile(image: RgbImage, options: AnalyzeOptions = {}): Promise<{ faces: FaceAnalysis[]; timings: StageTimings }> {
    const faces = await this.analyze(image, options);
    return { faces, timings: { detect: 0, landmarks: 0, eyes: 0, liveness: 0, quality: 0, embed: 0, total: 0 } };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function face(size: number, fault: Fault, embedding: Float32Array, analyzed: boolean): FaceAnalysis {
  return {
    box: { x: 10, y: 10, width: size, height: size, score: 0.99 },
    analyzed,
    landmarks: [],
    points5: [],
    pose: { yaw: fault === 10 ? 40 : 2, pitch: fault === 9 ? 40 : -3, roll: fault === 8 ? 30 : 1 },
    // F_003 bounds the mean of both eyes, so the fault closes both.
    eyes: fault === 3 ? { left: 0.05, right: 0.1 } : { left: 0.95, right: 0.9 },
    mouthOpenness: fault === 4 ? 0.8 : 0.05,
    sunglasses: fault === 5 ? 0.95 : 0.02,
    brightness: fault === 6 ? 20 : 128,
    sharpness: fault === 7 ? 1 : 500,
    faceSize: size,
    eyeDistance: size * 0.4,
    liveness: 0.9,
    embedding,
  };
}

function hashIdentity(data: Uint8Array): number {
  return crypto.createHash('sha256').update(data).digest().readUInt16BE(0) | 0x10000;
}

const cache = new Map<string, Float32Array>();

/** Unit vector: the identity's base, or base*c + sqrt(1-c^2)*noise (noise orthogonal to the base). */
export function templateFor(identity: number, variant: number, cosine: number): Float32Array {
  const key = `${identity}/${variant}/${cosine}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const base = unitVector(`id:${identity}`);
  let out = base;
  if (variant > 0) {
    const noise = unitVector(`noise:${identity}:${variant}`);
    const proj = dotF(noise, base);
    const orth = normalise(noise.map((v, i) => v - proj * base[i]));
    const s = Math.sqrt(Math.max(0, 1 - cosine * cosine));
    out = normalise(base.map((v, i) => cosine * v + s * orth[i]));
  }
  cache.set(key, out);
  return out;
}

function unitVector(seed: string): Float32Array {
  const v = new Float32Array(DIM);
  let block = Buffer.alloc(0);
  for (let i = 0; i < DIM; i++) {
    if (i % 16 === 0) block = crypto.createHash('sha256').update(`${seed}:${i}`).digest();
    v[i] = block.readUInt16BE((i % 16) * 2) / 65535 - 0.5;
  }
  return normalise(v);
}

function normalise(v: Float32Array): Float32Array {
  const n = Math.sqrt(dotF(v, v));
  return v.map((x) => x / n);
}

function dotF(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
