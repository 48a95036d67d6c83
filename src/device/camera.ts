// The device camera service: opens the configured source in the native capture pipeline and serves the
// live face (spec 4.1). Frames stay native; this side sees per-frame reports, status changes and, on a
// GET /person/face/, the live capture itself (a 120x120 crop, encoded here as JPEG, and the full colour
// frame kept for the faceKey).
//
// faceKey: an opaque handle of one live capture, valid for [liveness] face_key_ttl_s seconds (default 60)
// in this process. resolveKey() gives the full-resolution colour frame of that capture, so the device's
// person operations can enrol, identify or verify the live capture itself instead of a 120x120 JPEG.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

import type { Config } from '../config/types';
import { resolveOrtLibrary } from '../engine/ort-library';
import type { RgbImage } from '../engine/types';
import { packageRoot } from '../package-root';
import type { LiveFace, LiveFaceSource } from './live-face-source';
import {
  cameraAddon, type CameraEvent, type CameraStatus, type FrameEvent, type NativeCameraHandle,
  type NativeCameraOptions, type NativeLivenessOptions, type RgbPhoto,
} from './native-camera';
import { loadSyntheticPhotos } from './photos';
import { replayRecording } from './recording';
import { checkCameraConfig } from './camera-settings';

export const LIVE_FACE_SIZE = 120;
const MAX_KEYS = 32;
const RECENT_FRAMES = 64;

export interface LiveCapture {
  /** The capture's full colour frame. */
  image: RgbImage;
  /** JPEG of the full frame (what a person operation stores as its reference image). */
  jpeg(): Promise<Buffer>;
  box: { x: number; y: number; width: number; height: number };
  /** Milliseconds since the epoch when the faceKey was issued. */
  issuedAt: number;
}

export interface DeviceCameraStatus extends CameraStatus {
  /** The last decision and why it failed (empty: live), from the last analysed frame. */
  lastDecision?: { live: boolean; failed: string; face: boolean; timestampUs: number };
  keys: number;
}

export interface DeviceCameraOptions {
  modelDir?: string;
  ortLibrary?: string;
  /** Photos for the synthetic camera (default: [camera.synthetic] photos, or the npm demo photos). */
  photos?: RgbPhoto[];
  /** Extra per-event listener (tests, benchmarks, logs). */
  onEvent?: (event: CameraEvent) => void;
  /** Event queue capacity (default 16). */
  queueSize?: number;
  /** Overrides of native options (tests and benchmarks). */
  overrides?: Partial<NativeCameraOptions>;
}

/** The [liveness] section as the native pipeline's options. */
export function livenessOptions(l: Config['liveness']): NativeLivenessOptions {
  return {
    minFacePx: l.min_face_px,
    maxDistanceMm: l.max_distance_mm,
    minDepthCoverage: l.min_depth_coverage,
    minFaceWidthMm: l.min_face_width_mm,
    maxFaceWidthMm: l.max_face_width_mm,
    minPlaneRmsMm: l.min_plane_rms_mm,
    minNoseReliefMm: l.min_nose_relief_mm,
    maxNoseReliefMm: l.max_nose_relief_mm,
    maxEyeRecessMm: l.max_eye_recess_mm,
    maxDepthStepShare: l.max_depth_step_share,
    maxNoseOffset: l.max_nose_offset,
    maxYawDeg: l.max_yaw,
    maxPitchDeg: l.max_pitch,
    minInfraredPattern: l.min_infrared_pattern,
    windowFrames: l.window_frames,
    minPassFrames: l.min_pass_frames,
    maxGapMs: l.max_gap_ms,
    minMicroMotionMm: l.min_micro_motion_mm,
    requireBlink: l.require_blink,
    blinkClosed: l.blink_closed,
    blinkOpen: l.blink_open,
    blinkWindowMs: l.blink_window_ms,
    colourMin: l.colour_min,
    allowColourOnly: l.allow_colour_only,
    colourOnlyThreshold: l.colour_only_threshold,
    colourEvery: l.colour_every,
  };
}

/** Native options for the configured camera (photos decoded, image folders converted to recordings). */
export async function nativeCameraOptions(config: Config, options: DeviceCameraOptions = {}): Promise<NativeCameraOptions> {
  const c = config.camera;
  const settings = checkCameraConfig(config);
  if (!settings) throw new Error('[camera] source = none: no camera configured');
  const sourceOptions = { ...settings.options };
  const base: NativeCameraOptions = {
    source: settings.source.name,
    modelDir: path.resolve(options.modelDir ?? path.join(packageRoot(), 'models')),
    ortLibrary: options.ortLibrary ?? resolveOrtLibrary(),
    liveness: livenessOptions(config.liveness),
    workers: c.workers,
    reconnectMs: c.reconnect_ms,
    idleDetectFps: c.idle_detect_fps,
    cropSize: LIVE_FACE_SIZE,
    queueSize: options.queueSize ?? 16,
    sourceOptions,
  };
  if (c.fx > 0) base.intrinsics = { fx: c.fx, fy: c.fy || c.fx, cx: c.cx || undefined, cy: c.cy || undefined };
  if (settings.source.name === 'synthetic') {
    // The service decodes the photos; the addon takes the pixels.
    base.photos = options.photos ?? await loadSyntheticPhotos(String(sourceOptions.photos));
    delete sourceOptions.photos;
  } else if (settings.source.name === 'replay') {
    // A folder of images becomes a recording first.
    sourceOptions.path = await replayRecording(String(sourceOptions.path), Number(sourceOptions.fps));
  } else if (settings.configured.name === 'replay') {
    const file = String(sourceOptions[settings.source.recordingOption]);
    if (!fs.existsSync(file)) throw new Error(`[camera.replay] path: ${file} does not exist`);
  }
  return { ...base, ...options.overrides, sourceOptions: { ...sourceOptions, ...options.overrides?.sourceOptions } };
}

export class DeviceCamera implements LiveFaceSource {
  private readonly keys = new Map<string, LiveCapture>();
  private readonly byCapture = new Map<number, LiveFace>();
  private readonly recent: FrameEvent[] = [];
  private lastStatus: CameraStatus;
  private closed = false;

  private constructor(
    private readonly handle: NativeCameraHandle,
    private readonly config: Config,
    private readonly listeners: ((event: CameraEvent) => void)[],
  ) {
    this.lastStatus = handle.status();
  }

  /** Opens and starts the configured camera. */
  static async open(config: Config, options: DeviceCameraOptions = {}): Promise<DeviceCamera> {
    const listeners: ((event: CameraEvent) => void)[] = [];
    const nativeOptions = await nativeCameraOptions(config, options);
    nativeOptions.onEvent = (e) => { for (const l of listeners) l(e); };
    const handle = await cameraAddon.openCamera(nativeOptions);
    const camera = new DeviceCamera(handle, config, listeners);
    listeners.push((e) => camera.onEvent(e));
    if (options.onEvent) listeners.push(options.onEvent);
    handle.start();
    return camera;
  }

  /** Adds a listener of every report and status change; returns a function removing it. */
  subscribe(listener: (event: CameraEvent) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  connected(): boolean {
    return !this.closed && this.handle.status().connected;
  }

  /** The source's last error (the camera SDK's words), for readiness and the log; empty when none. */
  lastError(): string {
    return this.closed ? 'the camera is closed' : this.handle.status().lastError;
  }

  /** The face that passed liveness now or less than recency_ms ago, with a new faceKey; null: none. */
  async latest(): Promise<LiveFace | null> {
    if (this.closed) return null;
    const recency = this.config.liveness.recency_ms;
    const current = this.handle.liveFace(recency, false);
    if (!current) return null;
    // The same capture asked for again (within the 1 s, or between frames) keeps its key.
    const known = this.byCapture.get(current.id);
    if (known && this.resolveKey(known.faceKey)) return known;
    // A new capture: fetch it with its full frame (it may be a newer one by now).
    const live = this.handle.liveFace(recency, true);
    if (!live || !live.frame) return null;
    const jpeg = await sharp(Buffer.from(live.crop.buffer, live.crop.byteOffset, live.crop.byteLength), {
      raw: { width: live.cropSize, height: live.cropSize, channels: 3 },
    }).jpeg({ quality: 92 }).toBuffer();
    const frame = live.frame;
    const image: RgbImage = { data: frame.data, width: frame.width, height: frame.height };
    let encoded: Promise<Buffer> | undefined;
    const capture: LiveCapture = {
      image,
      jpeg: () => (encoded ??= sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength), {
        raw: { width: image.width, height: image.height, channels: 3 },
      }).jpeg({ quality: 95 }).toBuffer()),
      box: live.box,
      issuedAt: Date.now(),
    };
    const faceKey = `lf_${live.id.toString(36)}_${crypto.randomBytes(12).toString('base64url')}`;
    this.storeKey(faceKey, capture);
    const face = { faceKey, faceImage: jpeg.toString('base64') };
    this.byCapture.clear();
    this.byCapture.set(live.id, face);
    return face;
  }

  /** The live capture a faceKey stands for, while it is valid (face_key_ttl_s); undefined otherwise. */
  resolveKey(faceKey: string): LiveCapture | undefined {
    this.expireKeys();
    return this.keys.get(faceKey);
  }

  status(): DeviceCameraStatus {
    const s = this.closed ? { ...this.lastStatus, connected: false } : this.handle.status();
    const last = this.recent[this.recent.length - 1];
    return {
      ...s,
      keys: this.keys.size,
      ...(last ? { lastDecision: { live: last.decision.live, failed: last.decision.failed, face: last.face, timestampUs: last.timestampUs } } : {}),
    };
  }

  /** The last analysed frames' reports, oldest first (at most 64). */
  recentFrames(): FrameEvent[] {
    return [...this.recent];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.lastStatus = this.handle.status();
    this.closed = true;
    this.keys.clear();
    this.byCapture.clear();
    await this.handle.stop();
  }

  private onEvent(e: CameraEvent): void {
    if (e.type === 'frame') {
      this.recent.push(e);
      if (this.recent.length > RECENT_FRAMES) this.recent.shift();
    } else {
      this.lastStatus = e;
    }
  }

  private storeKey(key: string, capture: LiveCapture): void {
    this.expireKeys();
    this.keys.set(key, capture);
    while (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
  }

  private expireKeys(): void {
    const limit = Date.now() - this.config.liveness.face_key_ttl_s * 1000;
    for (const [key, capture] of this.keys) {
      if (capture.issuedAt >= limit) break; // insertion order = issue order
      this.keys.delete(key);
    }
  }
}
