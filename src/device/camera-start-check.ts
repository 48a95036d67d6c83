// A device whose camera is missing or failing serves no live face. Soon after the start the log says so, with
// what to check for that source, rather than leaving it to /health/ready and an R_400 at the first client.
import { findCameraSource } from './camera-catalog';
import type { CameraStatus } from './native-camera';

/** How long after the start a camera may take to connect before the log warns. */
export const CAMERA_START_GRACE_MS = 5_000;

export interface StartLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Warns once, `graceMs` after now, unless the camera has connected (or its recording ended); returns a cancel. */
export function warnWhenCameraAbsent(camera: { status(): Pick<CameraStatus, 'connected' | 'ended' | 'source' | 'lastError'> },
  log: StartLog, graceMs = CAMERA_START_GRACE_MS): () => void {
  const timer = setTimeout(() => {
    const s = camera.status();
    if (s.connected || s.ended) return;
    // Each source says what to check in its registry row.
    const hint = findCameraSource(s.source)?.hint || `check [camera] source and [camera.${s.source}]`;
    log.warn({ camera: s.source, lastError: s.lastError },
      `camera ${s.source} not connected ${graceMs / 1000} s after the start${s.lastError ? ` (${s.lastError})` : ''}: ` +
      `${hint}; GET /person/face/ answers R_400 until it connects`);
  }, graceMs);
  timer.unref();
  return () => clearTimeout(timer);
}
