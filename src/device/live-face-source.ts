// What a camera offers the service in device mode: the live face and the captures its faceKeys stand for.
// Types only, owned by the device side so the services can use a camera without importing its pipeline.
import type { RgbImage } from '../engine/types';

export interface LiveFace {
  faceKey: string;
  /** Base64 JPEG/PNG, 120x120 pixels. */
  faceImage: string;
}

/** The capture behind a faceKey: the full colour frame and where the live face was in it. */
export interface LiveCaptureView {
  image: RgbImage;
  box: { x: number; y: number; width: number; height: number };
}

export interface LiveFaceSource {
  /** False when the camera is disconnected (R_400). */
  connected(): boolean;
  /** Why it is disconnected, in the camera SDK's words (empty: unknown). */
  lastError?(): string;
  /** The live face of the last second, or null when none passed the liveness check (R_404). */
  latest(): Promise<LiveFace | null>;
  /** The capture a faceKey stands for while it is valid, else undefined. */
  resolveKey?(faceKey: string): LiveCaptureView | undefined;
}
