// Helpers of the device tests: a configuration for a camera source, the face-api demo photos as
// synthetic textures, and running a scenario to its end collecting every frame report.
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import { nativeCameraOptions, type DeviceCameraOptions } from '../../src/device/camera';
import { cameraAddon, type CameraStatus, type FrameEvent, type RgbPhoto } from '../../src/device/native-camera';
import { decodePhoto } from '../../src/device/photos';
import { samplePhotos } from './sample-photos';

let photos: Promise<RgbPhoto[]> | undefined;

/** The six face-api demo photos, decoded once per process. */
export function demoPhotos(): Promise<RgbPhoto[]> {
  return (photos ??= Promise.all(samplePhotos().map(decodePhoto)));
}

type DeepPartial<T> = { [K in keyof T]?: Partial<T[K]> };

/** Defaults of every section, device mode, with the given overrides. */
export function deviceConfig(overrides: DeepPartial<Config> = {}): Config {
  const config = defaultConfig();
  config.server.mode = 'device';
  for (const [section, values] of Object.entries(overrides)) Object.assign((config as unknown as Record<string, object>)[section], values);
  return config;
}

/** A synthetic scenario analysed frame by frame (lossless, virtual time) to its end. */
export async function runScenario(scenario: string, seed: number, config: Config = deviceConfig(), options: DeviceCameraOptions = {}): Promise<{ frames: FrameEvent[]; status: CameraStatus }> {
  config.camera = { ...config.camera, source: 'synthetic', sources: { synthetic: { scenario, seed, loop: false, realtime: false } } };
  return runToEnd(config, { photos: await demoPhotos(), ...options });
}

/** Opens the configured source with a lossless queue and collects reports until the source ends. */
export async function runToEnd(config: Config, options: DeviceCameraOptions = {}): Promise<{ frames: FrameEvent[]; status: CameraStatus }> {
  const frames: FrameEvent[] = [];
  const native = await nativeCameraOptions(config, { queueSize: 1 << 20, ...options });
  native.onEvent = (e) => { if (e.type === 'frame') frames.push(e); };
  const handle = await cameraAddon.openCamera(native);
  handle.start();
  try {
    while (!handle.status().ended) await new Promise((r) => setTimeout(r, 25));
    // Let the last queued reports arrive.
    await new Promise((r) => setTimeout(r, 50));
    return { frames, status: handle.status() };
  } finally {
    await handle.stop();
  }
}

/** Runs the configured camera, collecting frames until `done` says so (or the timeout). */
export async function collectFrames(config: Config, done: (frames: FrameEvent[], status: CameraStatus) => boolean, timeoutMs = 60_000): Promise<{ frames: FrameEvent[]; status: CameraStatus }> {
  const frames: FrameEvent[] = [];
  const native = await nativeCameraOptions(config, { queueSize: 1 << 20 });
  native.onEvent = (e) => { if (e.type === 'frame') frames.push(e); };
  const handle = await cameraAddon.openCamera(native);
  handle.start();
  try {
    const end = Date.now() + timeoutMs;
    while (!done(frames, handle.status()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    await new Promise((r) => setTimeout(r, 50));
    return { frames, status: handle.status() };
  } finally {
    await handle.stop();
  }
}

export interface PresentationOutcome {
  kind: string;
  presentation: number;
  frames: number;
  faceFrames: number;
  liveFrames: number;
  /** Milliseconds from the presentation's first frame to its first live decision (null: never). */
  firstLiveMs: number | null;
  failed: Record<string, number>;
}

/** Frame reports grouped by synthetic presentation. */
export function presentations(frames: FrameEvent[]): PresentationOutcome[] {
  const byId = new Map<number, PresentationOutcome & { t0: number }>();
  for (const f of frames) {
    let p = byId.get(f.truth.presentation);
    if (!p) {
      p = { kind: f.truth.kind, presentation: f.truth.presentation, frames: 0, faceFrames: 0, liveFrames: 0, firstLiveMs: null, failed: {}, t0: f.timestampUs };
      byId.set(f.truth.presentation, p);
    }
    p.frames++;
    if (f.face) p.faceFrames++;
    if (f.decision.live) {
      p.liveFrames++;
      if (p.firstLiveMs === null) p.firstLiveMs = (f.timestampUs - p.t0) / 1000;
    }
    for (const reason of f.decision.failed.split(',').filter(Boolean)) p.failed[reason] = (p.failed[reason] ?? 0) + 1;
  }
  return [...byId.values()].map(({ t0: _t0, ...p }) => p);
}
