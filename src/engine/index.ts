// The face engine's TypeScript API: Promise-based, every heavy step runs in the native addon off the
// event loop. Image decoding lives in src/image; this takes raw RGB.
import fs from 'node:fs';
import path from 'node:path';

import { native, type NativeEngineHandle, type NativeFace, type StageTimings } from '../native';
import { packageRoot } from '../package-root';
import { resolveOrtLibrary } from './ort-library';
import type { AnalyzeOptions, EngineOptions, FaceAnalysis, FaceEngine, Point, RgbImage } from './types';

export type * from './types';
export type { StageTimings } from '../native';

function points(flat: Float32Array): Point[] {
  const out: Point[] = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ x: flat[i], y: flat[i + 1] });
  return out;
}

function toAnalysis(f: NativeFace): FaceAnalysis {
  const analysis: FaceAnalysis = {
    box: f.box,
    landmarks: points(f.landmarks),
    points5: points(f.points5),
    analyzed: f.analyzed,
    pose: { yaw: f.yaw, pitch: f.pitch, roll: f.roll },
    eyes: { left: f.eyeLeft, right: f.eyeRight },
    mouthOpenness: f.mouthOpenness,
    sunglasses: f.sunglasses,
    brightness: f.brightness,
    sharpness: f.sharpness,
    faceSize: f.box.width,
    eyeDistance: f.eyeDistance,
    liveness: f.liveness,
    embedding: f.embedding,
  };
  if (f.alignedCrop) analysis.alignedCrop = f.alignedCrop;
  return analysis;
}

interface ManifestModel { id: string; file: string; sha256: string; outputs: Record<string, number[]> }
interface TemplateSpec { models: { id: string; weight: number }[] }

/**
 * The embedding networks of the template (models/manifest.json `template`, in the native engine's order:
 * fr_feature, then MobileFaceNet), their weights, and the template's identifier: templates carry it, so a
 * change of any network's file, of a weight or of flip-averaging forces a reindex.
 */
function templateModels(modelDir: string, flipAverage: boolean): { modelId: string; weights: number[]; size: number } {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'manifest.json'), 'utf8')) as
    { models: ManifestModel[]; template: TemplateSpec };
  // The native engine takes the weights by position: fr_feature's, then MobileFaceNet's.
  const order = manifest.template.models.map((m) => m.id).join(',');
  if (order !== 'feature,mobilefacenet') throw new Error(`face-check: the manifest's template must list feature, mobilefacenet (has ${order})`);
  let size = 0;
  const parts = manifest.template.models.map(({ id, weight }) => {
    const model = manifest.models.find((m) => m.id === id);
    if (!model) throw new Error(`face-check: the manifest's template names an unknown model ${id}`);
    size += Object.values(model.outputs)[0][1];
    if (!fs.existsSync(path.join(modelDir, model.file))) {
      throw new Error(`face-check: model ${model.file} missing in ${modelDir}; run npm install (or scripts/fetch-assets.js)`);
    }
    return `${model.file.replace(/\.onnx$/, '')}@${model.sha256.slice(0, 12)}:${weight}`;
  });
  return { modelId: `${parts.join('+')}${flipAverage ? '+flip' : ''}`, weights: manifest.template.models.map((m) => m.weight), size };
}

class NativeFaceEngine implements FaceEngine {
  constructor(private handle: NativeEngineHandle, readonly modelId: string, readonly templateSize: number) {}

  async analyze(image: RgbImage, options: AnalyzeOptions = {}): Promise<FaceAnalysis[]> {
    return (await this.profile(image, options)).faces;
  }

  async profile(image: RgbImage, options: AnalyzeOptions = {}): Promise<{ faces: FaceAnalysis[]; timings: StageTimings }> {
    const { faces, timings } = await this.handle.analyze(image.data, image.width, image.height, options);
    return { faces: faces.map(toAnalysis), timings };
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

export async function createEngine(options: EngineOptions = {}): Promise<FaceEngine> {
  const modelDir = path.resolve(options.modelDir ?? path.join(packageRoot(), 'models'));
  const flipAverage = options.flipAverage ?? false;
  const { modelId, weights, size } = templateModels(modelDir, flipAverage);
  const handle = await native.createEngine({
    modelDir,
    ortLibrary: options.ortLibrary ?? resolveOrtLibrary(),
    threads: options.threads ?? 1,
    flipAverage,
    templateWeights: weights,
    ...(options.minDetectionScore !== undefined ? { minDetectionScore: options.minDetectionScore } : {}),
    ...(options.maxPixels !== undefined ? { maxPixels: options.maxPixels } : {}),
  });
  return new NativeFaceEngine(handle, modelId, size);
}

/** Cosine similarity of two L2-normalised templates. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
