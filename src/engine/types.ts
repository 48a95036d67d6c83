// The engine's public types: what the native face engine returns for one photo.
import type { StageTimings } from '../native';

/** Raw pixels handed to the engine: interleaved 8-bit RGB, row-major, no padding. */
export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}

export interface Point {
  x: number;
  y: number;
}

export interface FaceBox {
  /** Top-left corner and size in source-image pixels (a square box around the face). */
  x: number;
  y: number;
  width: number;
  height: number;
  /** Detector confidence 0..1. */
  score: number;
}

export interface FacePose {
  /** Degrees. Positive yaw = face turned towards the image's left; roll positive = clockwise. */
  yaw: number;
  pitch: number;
  roll: number;
}

export interface FaceAnalysis {
  box: FaceBox;
  /** False for faces beyond AnalyzeOptions.maxFaces: they carry box, landmarks and sizes only. */
  analyzed: boolean;
  /** 68 iBUG points in source-image pixels. */
  landmarks: Point[];
  /** Alignment points: left eye, right eye, nose tip, left mouth corner, right mouth corner. */
  points5: Point[];
  pose: FacePose;
  /** Eye openness 0 (closed) .. 1 (open) from the eye-state model, per eye as seen in the image. */
  eyes: { left: number; right: number };
  /** Inner-lip gap divided by mouth width (0 = closed). */
  mouthOpenness: number;
  /** 0..1 likelihood that the eyes are hidden by dark glasses. */
  sunglasses: number;
  /** Mean luma (0..255) of the face region. */
  brightness: number;
  /** Variance of the Laplacian of the face region resampled to a fixed size (higher = sharper). */
  sharpness: number;
  /** Face size in source pixels: the side of the face box. */
  faceSize: number;
  /** Inter-ocular distance in source pixels. */
  eyeDistance: number;
  /** Passive colour liveness 0 (attack) .. 1 (live) from the fr_liveness model. */
  liveness: number;
  /** The face template (704 values, unit length): fr_feature's 512-d and MobileFaceNet's 192-d embeddings,
   *  each L2-normalised and weighted (models/manifest.json `template`); the cosine of two templates is the
   *  weighted sum of the two networks' cosines. Empty when embeddings were not asked for. */
  embedding: Float32Array;
  /** The 112x112 RGB aligned crop, when asked for. */
  alignedCrop?: Uint8Array;
}

export interface AnalyzeOptions {
  /** Compute embeddings (default true). */
  embed?: boolean;
  /** Return the aligned 112x112 crop (default false). */
  crop?: boolean;
  /** Run the eye-state model (default true); without it `eyes` reads 0. */
  eyes?: boolean;
  /** Run the passive colour liveness model (default true); without it `liveness` reads 0. */
  liveness?: boolean;
  /** Measure brightness, sharpness, mouth openness and sunglasses (default true); without it they read 0. */
  quality?: boolean;
  /** Locate the landmarks (and pose) of the faces beyond maxFaces too (default true); without it those faces
   *  carry their box (and so their size) only. */
  otherFaceLandmarks?: boolean;
  /** Analyse at most this many faces, largest first (default: all, up to 64). Counting still sees all. */
  maxFaces?: number;
}

export interface EngineOptions {
  /** Folder holding the ONNX models named in models/manifest.json (default: the package's models/). */
  modelDir?: string;
  /** Threads one analysis may use (default 1; 2 runs the second embedding network, the eye and liveness models
   *  beside the first network). Each
   *  ONNX session runs single-threaded: the service gets its parallelism from concurrent analyses. */
  threads?: number;
  /** Path of libonnxruntime.so.1 (default: resolved from the onnxruntime-node package). */
  ortLibrary?: string;
  /** Average each network's embeddings of the aligned crop and its mirror image (default false: on LFW it
   *  changed one pair in 1,000 for twice the embedding time). Templates made either way get different model ids. */
  flipAverage?: boolean;
  /** The template networks' precision (default: FACE_CHECK_PRECISION, else models/manifest.json
   *  `template.precision`). int8 and float32 templates get different model ids. */
  precision?: 'int8' | 'float32';
  /** Detector confidence below which a candidate is not a face (default 0.85). */
  minDetectionScore?: number;
  /** Largest image the engine accepts, in pixels (default 100,000,000). */
  maxPixels?: number;
}

export interface FaceEngine {
  /** Identifier of the embedding model; templates of different models are never compared. */
  readonly modelId: string;
  /** Number of values in a template (704: fr_feature's 512 and MobileFaceNet's 192). */
  readonly templateSize: number;
  /** Every face in the image, largest first. No face: an empty array. */
  analyze(image: RgbImage, options?: AnalyzeOptions): Promise<FaceAnalysis[]>;
  /** analyze() plus the time spent in each stage, for benchmarks. */
  profile(image: RgbImage, options?: AnalyzeOptions): Promise<{ faces: FaceAnalysis[]; timings: StageTimings }>;
  /** Refused (rejects) while analyses are running; afterwards every call rejects. */
  close(): Promise<void>;
  /** Analyses queued or running (the native engine's count; the HTTP layer's overload bound reads it). */
  readonly pending?: number;
}
