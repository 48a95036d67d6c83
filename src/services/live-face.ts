// GET /person/face/ (device mode): the liveness-verified face in front of the camera now or less than
// one second ago. The camera itself is issue 6; it plugs in through LiveFaceSource.
import type { RgbImage } from '../engine/types';
import type { ServiceContext } from './context';

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
  /** The live face of the last second, or null when none passed the liveness check (R_404). */
  latest(): Promise<LiveFace | null>;
  /** The capture a faceKey stands for while it is valid, else undefined. */
  resolveKey?(faceKey: string): LiveCaptureView | undefined;
}

export async function getLiveFace(ctx: ServiceContext): Promise<LiveFace> {
  const source = ctx.camera;
  if (!source || !source.connected()) throw ctx.errors.create('CameraNotConnected');
  const face = await source.latest();
  if (!face) throw ctx.errors.create('LiveFaceNotFound');
  return face;
}
