// The face engine's TypeScript API: Promise-based, every heavy step runs in the native addon off the
// event loop. Image decoding lives in src/image; this takes raw RGB.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { native, type NativeEngineHandle, type NativeFace, type StageTimings } from '../native';
import { packageRoot } from '../package-root';
import { resolveOrtLibrary } from './ort-library';
import { nativeTemplateNetworks, templateModelId, templateNetworks, templateSize, type Precision, type TemplateNetwork } from './template-spec';
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

/**
 * The template's networks and identifier: templates carry the identifier, so a change of any network's file,
 * of a weight or of flip-averaging forces a reindex.
 */
function templateModels(modelDir: string, flipAverage: boolean, precision?: Precision): { modelId: string; networks: TemplateNetwork[]; size: number } {
  const networks = templateNetworks(undefined, precision);
  for (const { file } of networks) {
    if (!fs.existsSync(path.join(modelDir, file))) {
      throw new Error(`face-check: model ${file} missing in ${modelDir}; run npm install (or scripts/fetch-assets.js)`);
    }
  }
  return { modelId: templateModelId(networks, flipAverage), networks, size: templateSize(networks) };
}

/**
 * Analyses handed to the native engine at once: one per core. Each is CPU-bound on one thread at the
 * process's own priority (engine_binding.cpp), so more would only time-slice the cores (no more throughput)
 * while crowding out the event loop and the image decodes that share libuv's pool; the rest wait here.
 */
export const ANALYSES_AT_ONCE = Math.max(1, os.availableParallelism());

class NativeFaceEngine implements FaceEngine {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private handle: NativeEngineHandle, readonly modelId: string, readonly templateSize: number) {}

  async analyze(image: RgbImage, options: AnalyzeOptions = {}): Promise<FaceAnalysis[]> {
    return (await this.profile(image, options)).faces;
  }

  async profile(image: RgbImage, options: AnalyzeOptions = {}): Promise<{ faces: FaceAnalysis[]; timings: StageTimings }> {
    // A finishing analysis hands its slot straight to the next waiting one.
    if (this.running < ANALYSES_AT_ONCE) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      const { faces, timings } = await this.handle.analyze(image.data, image.width, image.height, options);
      return { faces: faces.map(toAnalysis), timings };
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  close(): Promise<void> {
    // Refused by the native engine while analyses run; a waiting one implies a running one.
    return this.handle.close();
  }

  get pending(): number {
    return this.handle.pending + this.waiting.length;
  }
}

export async function createEngine(options: EngineOptions = {}): Promise<FaceEngine> {
  const modelDir = path.resolve(options.modelDir ?? path.join(packageRoot(), 'models'));
  const flipAverage = options.flipAverage ?? false;
  const { modelId, networks, size } = templateModels(modelDir, flipAverage, options.precision);
  const handle = await native.createEngine({
    modelDir,
    ortLibrary: options.ortLibrary ?? resolveOrtLibrary(),
    threads: options.threads ?? 1,
    flipAverage,
    templateNetworks: nativeTemplateNetworks(networks),
    ...(options.minDetectionScore !== undefined ? { minDetectionScore: options.minDetectionScore } : {}),
    ...(options.maxPixels !== undefined ? { maxPixels: options.maxPixels } : {}),
  });
  return new NativeFaceEngine(handle, modelId, size);
}
