// Types of the addon's camera binding (native/addon/camera_binding.cpp). Frames never reach JavaScript:
// only per-frame reports and status changes do (through a bounded queue), and the live face on request.
import { native } from '../native';


/** Thresholds of the liveness decision (native LivenessConfig); docs/device.md explains each. */
export interface NativeLivenessOptions {
  minFacePx?: number;
  maxDistanceMm?: number;
  minDepthCoverage?: number;
  minFaceWidthMm?: number;
  maxFaceWidthMm?: number;
  minPlaneRmsMm?: number;
  minNoseReliefMm?: number;
  maxNoseReliefMm?: number;
  maxEyeRecessMm?: number;
  maxDepthStepShare?: number;
  maxNoseOffset?: number;
  maxYawDeg?: number;
  maxPitchDeg?: number;
  minInfraredPattern?: number;
  windowFrames?: number;
  minPassFrames?: number;
  maxGapMs?: number;
  minMicroMotionMm?: number;
  requireBlink?: boolean;
  blinkClosed?: number;
  blinkOpen?: number;
  blinkWindowMs?: number;
  colourMin?: number;
  allowColourOnly?: boolean;
  colourOnlyThreshold?: number;
  colourEvery?: number;
}

export interface RgbPhoto {
  data: Uint8Array;
  width: number;
  height: number;
}

export interface NativeCameraOptions {
  /** A source of the registry (camera-catalog.ts). */
  source: string;
  modelDir: string;
  ortLibrary: string;
  minDetectionScore?: number;
  intrinsics?: { fx: number; fy?: number; cx?: number; cy?: number };
  /** The source's options by key, as its [camera.<source>] section takes them; checked by the addon again. */
  sourceOptions?: Record<string, string | number | boolean>;
  /** Options the program sets itself (an OpenNI2 recording's record_path), never read from the ini. */
  programOptions?: Record<string, string | number | boolean>;
  /**
   * Photos whose faces texture the synthetic source's heads and attacks. Read in place while the camera
   * opens (not copied): leave them unchanged until openCamera() settles; nothing holds them afterwards.
   */
  photos?: RgbPhoto[];
  liveness?: NativeLivenessOptions;
  /** Analysis worker threads (default 1). */
  workers?: number;
  /** false: capture (and record) only. */
  process?: boolean;
  reconnectMs?: number;
  /** Realtime sources: frames a second analysed once no face was found for idleAfterMs (0: every frame). */
  idleDetectFps?: number;
  /** No face found for this long (default 1000 ms): analyse at idleDetectFps until one is. */
  idleAfterMs?: number;
  /** While idle: free heap memory back to the kernel on entering idle, then this often (default 10000 ms; 0: never). */
  idleTrimMs?: number;
  cropSize?: number;
  cropGrow?: number;
  maxFrames?: number;
  record?: { dir?: string; format?: 'face-check' | 'fakenect'; frames?: number; stopAfter?: boolean };
  /** 'all': a report per analysed frame; 'none': status changes only. */
  reports?: 'all' | 'none';
  /** Capacity of the event queue toward JavaScript; a full queue drops (and counts) reports. */
  queueSize?: number;
  onEvent?: (event: CameraEvent) => void;
}

export interface DepthReport {
  measured: boolean;
  coverage: number;
  depthMm: number;
  faceWidthMm: number;
  eyeDistanceMm: number;
  planeRmsMm: number;
  curvedRmsMm: number;
  noseReliefMm: number;
  eyeRecessMm: number;
  depthStepShare: number;
  noseOffset: number;
  yawDeg: number;
  pitchDeg: number;
  /** The projector's dot pattern on the face (-1: the camera gives no infrared image). */
  infraredPattern: number;
  samples: number;
  /** Failed depth checks, comma separated ("flat,nose-relief"); empty when all passed. */
  failed: string;
}

export interface FrameEvent {
  type: 'frame';
  sequence: number;
  timestampUs: number;
  /** Ground truth of synthetic frames (kind "" elsewhere). */
  truth: { kind: string; presentation: number; seed: string };
  face: boolean;
  faces: number;
  box?: { x: number; y: number; width: number; height: number; score: number };
  eyeLeft: number;
  eyeRight: number;
  /** fr_liveness on this frame, -1 when it did not run. */
  colourFrame: number;
  depth: DepthReport;
  decision: {
    live: boolean;
    failed: string;
    windowSize: number;
    windowPass: number;
    colour: number;
    microMotionMm: number;
    blinkSeen: boolean;
    newTrack: boolean;
  };
  analyseMs: number;
  /** Capture to decision, queue wait included. */
  latencyMs: number;
  /** Id of the live capture stored from this frame, 0 when none. */
  liveId: number;
}

export interface CameraStatus {
  connected: boolean;
  /** The source will deliver no more frames (a recording or scenario that does not loop). */
  ended: boolean;
  source: string;
  lastError: string;
  framesCaptured: number;
  framesAnalysed: number;
  /** Frames replaced by newer ones while every worker was busy (realtime sources). */
  framesDropped: number;
  /** Reports refused by the full event queue. */
  reportsDropped: number;
  framesRecorded: number;
  reconnects: number;
  liveCaptures: number;
  /** Frames captured while idle and not analysed (every analysed frame runs the detector once). */
  framesIdleSkipped: number;
  /** Analysing at idleDetectFps: no face found in the last idleAfterMs. */
  idle: boolean;
  /** Times the process's free heap memory went back to the kernel while idle (on entering idle, then every idleTrimMs). */
  heapTrims: number;
  captureFps: number;
  analyseFps: number;
  workerCpuMs: number;
  captureCpuMs: number;
  lastFrameUs: number;
}

export interface StatusEvent extends CameraStatus {
  type: 'status';
}

export type CameraEvent = FrameEvent | StatusEvent;

export interface NativeLiveFace {
  id: number;
  ageMs: number;
  timestampUs: number;
  /** cropSize x cropSize RGB. */
  crop: Uint8Array;
  cropSize: number;
  box: { x: number; y: number; width: number; height: number; score: number };
  landmarks: Float32Array;
  colour: number;
  depth: DepthReport;
  frame?: RgbPhoto;
}

export interface NativeCameraHandle {
  start(): void;
  /** Stops the threads (the last frame being analysed completes first). */
  stop(): Promise<void>;
  status(): CameraStatus;
  /** The newest live capture stored less than maxAgeMs ago; withFrame adds the full colour frame. */
  liveFace(maxAgeMs: number, withFrame?: boolean): NativeLiveFace | null;
  /** Number of face textures the synthetic camera found in its photos. */
  readonly textures: number;
}

interface CameraAddon {
  openCamera(options: NativeCameraOptions): Promise<NativeCameraHandle>;
}

export const cameraAddon = native as unknown as CameraAddon;
