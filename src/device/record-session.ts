// `face-check record --label ...`: one labelled liveness session, <folder>/<session-id>/ holding the
// recording (face-check format in recording/, or the camera SDK's own file, recording.bag or
// recording.oni) and session.json (what was presented, by whom, how far).
import fs from 'node:fs';
import path from 'node:path';

import type { Config } from '../config/types';
import type { DeviceCameraOptions } from './camera';
import type { CameraStatus } from './native-camera';
import { recordCamera } from './record';
import { findCameraSource } from './camera-catalog';
import { checkCameraConfig } from './camera-settings';
import {
  checkDistanceCm, checkLabel, checkNote, checkSessionId, checkSubject, newSessionId, SESSION_VERSION,
  SessionError, writeSessionInfo, type SessionInfo,
} from './session';

/** The recording inside a session: a folder (face-check), or the SDK's file (recording.<format>). */
const RECORDING = 'recording';

export interface SessionRecordOptions {
  /** The folder of sessions (created when missing; its parent must exist). */
  folder: string;
  label: string;
  subject?: string;
  distanceCm?: number;
  note?: string;
  /** Default: UTC time, label and subject. */
  id?: string;
  frames: number;
  timeoutMs?: number;
  /** face-check (default), or the configured camera SDK's own format (bag, oni): what the camera itself gave. */
  format?: string;
}

/**
 * What the camera was, for the record: the configured source and its options, without the libraries and
 * paths of the operator's machine (a path option keeps only its last part).
 */
function cameraOf(config: Config): SessionInfo['camera'] {
  const settings = checkCameraConfig(config);
  if (!settings) return { source: 'none' };
  const out: SessionInfo['camera'] = { source: settings.configured.name };
  const specs = findCameraSource(settings.configured.name)?.options ?? [];
  for (const spec of specs) {
    const value = settings.configured.options[spec.key];
    if (value === undefined || value === '' || spec.key === 'library' || !spec.settable) continue;
    out[spec.key] = spec.path ? String(value).split(',').map((p) => path.basename(p)).join(',') : value;
  }
  return out;
}

/** Records one session; resolves with its folder, session.json's content and the camera's final status. */
export async function recordSession(config: Config, options: SessionRecordOptions, deviceOptions: DeviceCameraOptions = {}): Promise<{ dir: string; info: SessionInfo; status: CameraStatus }> {
  const label = checkLabel(options.label);
  const subject = options.subject === undefined ? '' : checkSubject(options.subject);
  const distanceCm = options.distanceCm === undefined ? null : checkDistanceCm(options.distanceCm);
  const note = checkNote(options.note ?? '');
  const id = checkSessionId(options.id ?? newSessionId(label, subject));
  const folder = path.resolve(options.folder);
  if (!fs.existsSync(path.dirname(folder))) throw new SessionError(`record: ${path.dirname(folder)} does not exist`);
  fs.mkdirSync(folder, { recursive: true });
  const dir = path.join(folder, id);
  try {
    fs.mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new SessionError(`record: session ${id} already exists in ${folder}`);
    throw err;
  }
  try {
    const format = options.format ?? 'face-check';
    const recording = format === 'face-check' ? RECORDING : `${RECORDING}.${format}`;
    const status = await recordCamera(config, { dir: path.join(dir, recording), frames: options.frames, format, timeoutMs: options.timeoutMs }, deviceOptions);
    const info: SessionInfo = {
      faceCheckSession: SESSION_VERSION, id, label, subject, distanceCm, note,
      recording: { format, path: recording, frames: status.framesRecorded },
      camera: cameraOf(config),
      recordedAt: new Date().toISOString(),
    };
    // Written last: a session folder with a session.json always holds a whole recording.
    writeSessionInfo(dir, info);
    return { dir, info, status };
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
