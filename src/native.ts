// Loads the native addon once (a prebuild from prebuilds/, else the local build/) via node-gyp-build. The
// only loader: the engine, the index, the camera and the native statuses all take the addon from here.
import { packageRoot } from './package-root';

/** Milliseconds per stage of one analyze call (summed over faces; with threads=2 stages overlap). */
export interface StageTimings {
  detect: number;
  /** Landmarks and the head pose computed from them. */
  landmarks: number;
  eyes: number;
  liveness: number;
  /** Alignment warp and quality measures. */
  quality: number;
  embed: number;
  total: number;
  /** How many times each stage ran (detect once per image, the others once per face they ran for); a
   *  stage that did not run reads 0 here and in its time. */
  runs?: StageRuns;
}

export interface StageRuns {
  detect: number;
  landmarks: number;
  eyes: number;
  liveness: number;
  quality: number;
  embed: number;
}

export interface NativeFace {
  box: { x: number; y: number; width: number; height: number; score: number };
  landmarks: Float32Array;
  points5: Float32Array;
  analyzed: boolean;
  yaw: number;
  pitch: number;
  roll: number;
  eyeLeft: number;
  eyeRight: number;
  mouthOpenness: number;
  sunglasses: number;
  brightness: number;
  sharpness: number;
  eyeDistance: number;
  liveness: number;
  embedding: Float32Array;
  alignedCrop?: Uint8Array;
}

export interface NativeEngineHandle {
  analyze(pixels: Uint8Array, width: number, height: number,
    options?: { embed?: boolean; crop?: boolean; maxFaces?: number; eyes?: boolean; liveness?: boolean;
      quality?: boolean; otherFaceLandmarks?: boolean }): Promise<{ faces: NativeFace[]; timings: StageTimings }>;
  close(): Promise<void>;
  readonly pending: number;
}

/** One embedding network of the face template, as createEngine takes it (src/engine/template-spec.ts
 *  builds it from models/manifest.json and checks it). */
export interface NativeTemplateNetwork {
  /** The model file in modelDir. */
  file: string;
  /** Input and output tensor names. */
  input: string;
  output: string;
  /** The NCHW float32 input's size; the aligned face is warped to it. */
  width: number;
  height: number;
  channels: 'RGB' | 'BGR';
  /** value = (pixel - mean) / std, per channel in `channels` order. */
  mean: number[];
  std: number[];
  /** Values in the network's embedding. */
  outputSize: number;
  /** Share of the template's cosine (the weights sum to 1). */
  weight: number;
}

export interface NativeAddon {
  /** The native statuses' names (native/core/status.h), indexed by value. */
  nativeStatuses: string[];
  createEngine(options: {
    modelDir: string; ortLibrary: string; threads?: number; flipAverage?: boolean;
    /** Without it the engine finds and analyses faces but does not embed (the device camera's). */
    templateNetworks?: NativeTemplateNetwork[];
    minDetectionScore?: number; maxPixels?: number;
  }): Promise<NativeEngineHandle>;
  [binding: string]: unknown;
}

function loadAddon(): NativeAddon {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('node-gyp-build')(packageRoot());
  } catch (err) {
    throw new Error(`the native addon is not built (npm run build:native): ${(err as Error).message}`);
  }
}

export const native: NativeAddon = loadAddon();

/** The statuses native errors carry (as `status`): each names a row of src/error-table.ts. */
export function nativeStatuses(): string[] {
  if (!Array.isArray(native.nativeStatuses)) throw new Error('the native addon does not export nativeStatuses');
  return native.nativeStatuses;
}
