// GET /person/face/ (device mode): the liveness-verified face in front of the camera now or less than
// one second ago. The camera itself is issue 6; it plugs in through LiveFaceSource.
import type { ServiceContext } from './context';

export interface LiveFace {
  faceKey: string;
  /** Base64 JPEG/PNG, 120x120 pixels. */
  faceImage: string;
}

export interface LiveFaceSource {
  /** False when the camera is disconnected (R_400). */
  connected(): boolean;
  /** The live face of the last second, or null when none passed the liveness check (R_404). */
  latest(): Promise<LiveFace | null>;
}

export async function getLiveFace(ctx: ServiceContext, source: LiveFaceSource | undefined): Promise<LiveFace> {
  if (!source || !source.connected()) throw ctx.errors.create('CameraNotConnected');
  const face = await source.latest();
  if (!face) throw ctx.errors.create('LiveFaceNotFound');
  return face;
}
