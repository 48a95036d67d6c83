// GET /person/face/ (device mode): the liveness-verified face in front of the camera now or less than
// one second ago. The camera plugs in through LiveFaceSource (src/device/live-face-source.ts).
import type { LiveFace } from '../device/live-face-source';
import type { ServiceContext } from './context';

export async function getLiveFace(ctx: ServiceContext): Promise<LiveFace> {
  const source = ctx.camera;
  if (!source || !source.connected()) throw ctx.errors.create('CameraNotConnected');
  const face = await source.latest();
  if (!face) throw ctx.errors.create('LiveFaceNotFound');
  return face;
}
