// The baseline's copy of the engine's landmark head pose (native/core/face/landmark_pose.cpp), in TypeScript.
import type { Point } from '../src/engine/types';

const DEG = 180 / Math.PI;
const mid = (a: Point, b: Point): Point => ({ x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 });
const unit = (v: number) => Math.max(-1, Math.min(1, v));

export function landmarkPose(p: readonly Point[]): { yaw: number; pitch: number; roll: number } {
  const leftEye = mid(p[36], p[39]), rightEye = mid(p[42], p[45]);
  const roll = Math.atan2(rightEye.y - leftEye.y, rightEye.x - leftEye.x);
  const c = Math.cos(-roll), s = Math.sin(-roll);
  const rx = (q: Point) => q.x * c - q.y * s, ry = (q: Point) => q.x * s + q.y * c;
  const across = (2 * (rx(p[30]) - rx(p[2]))) / Math.max(1e-6, rx(p[14]) - rx(p[2])) - 1;
  const eyes = ry(mid(leftEye, rightEye)), mouth = ry(mid(p[48], p[54]));
  const down = (ry(p[30]) - eyes) / Math.max(1e-6, mouth - eyes);
  return { yaw: -Math.asin(unit(across)) * DEG, pitch: Math.asin(unit((0.55 - down) * 2)) * DEG, roll: roll * DEG };
}
