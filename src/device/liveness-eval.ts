// `face-check liveness-eval <folder>`: replays every labelled session through the pipeline the device
// runs (the camera source for the recording's format, the capture pipeline, the [liveness] thresholds of
// the given ini) and turns what it decided into ISO/IEC 30107-3 metrics (pad-metrics.ts). A presentation
// is accepted when the pipeline stored a live capture from any of its frames: what GET /person/face/ would
// have served. Every frame is analysed (the replay runs as fast as the analysis, none dropped), each
// session in a camera of its own so that each is a new face track.
import path from 'node:path';

import type { Config } from '../config/types';
import { nativeCameraOptions } from './camera';
import { cameraCatalog } from './camera-catalog';
import { cameraAddon, type CameraStatus, type FrameEvent } from './native-camera';
import { padMetrics, type PadMetrics, type SessionDecision } from './pad-metrics';
import { listSessions, SessionError, type SessionInfo } from './session';

/** How this build replays a recording format: the [camera] settings that play it, once, losslessly. */
type Replayer = (recording: string, config: Config) => Config['camera'];

/**
 * The face-check format through the replay source, and each camera SDK's own format (".bag") through the
 * source that plays it, when that source can play every frame (its `realtime` option off): the
 * evaluation must see every frame the session holds.
 */
function replayers(): Record<string, Replayer> {
  const out: Record<string, Replayer> = {
    'face-check': (recording, config) => ({
      ...config.camera, source: 'replay',
      sources: { ...config.camera.sources, replay: { path: recording, loop: false, realtime: false } },
    }),
  };
  for (const source of cameraCatalog()) {
    if (source.name === 'replay' || !source.options.some((o) => o.key === 'realtime')) continue;
    for (const ext of source.recordingExtensions) {
      out[ext.replace(/^\./, '').toLowerCase()] = (recording, config) => ({
        ...config.camera, source: source.name,
        sources: { ...config.camera.sources, [source.name]: { ...config.camera.sources?.[source.name], [source.recordingOption]: recording, loop: false, realtime: false } },
      });
    }
  }
  return out;
}

export function supportedFormats(): string[] {
  return Object.keys(replayers());
}

function replayerFor(info: SessionInfo): Replayer {
  const replayer = replayers()[info.recording.format];
  if (!replayer) throw new SessionError(`session ${info.id}: format ${info.recording.format} not supported by this build (supported: ${supportedFormats().join(', ')})`);
  return replayer;
}

export interface EvalResult {
  folder: string;
  /** Formats this build replays. */
  formats: string[];
  /** The [liveness] thresholds the sessions were decided with. */
  liveness: Config['liveness'];
  sessions: (SessionDecision & { format: string; note: string })[];
  metrics: PadMetrics;
}

/** Replays one recording; resolves with every frame's report in order. */
async function replayFrames(config: Config): Promise<{ frames: FrameEvent[]; status: CameraStatus }> {
  const frames: FrameEvent[] = [];
  const options = await nativeCameraOptions(config, { queueSize: 1 << 20 });
  options.onEvent = (e) => { if (e.type === 'frame') frames.push(e); };
  const handle = await cameraAddon.openCamera(options);
  handle.start();
  try {
    while (!handle.status().ended) await new Promise((r) => setTimeout(r, 10));
    // The last reports cross the event queue after the end is set.
    let status = handle.status();
    for (let i = 0; i < 200 && frames.length < status.framesAnalysed; i++) {
      await new Promise((r) => setTimeout(r, 10));
      status = handle.status();
    }
    return { frames: frames.sort((a, b) => a.sequence - b.sequence), status };
  } finally {
    await handle.stop();
  }
}

/** The pipeline's decision on one session's frame reports. */
export function decideSession(info: SessionInfo, frames: FrameEvent[]): SessionDecision {
  const t0 = frames.length ? frames[0].timestampUs : 0;
  const last = frames.length ? frames[frames.length - 1].timestampUs : 0;
  const firstLive = frames.find((f) => f.liveId > 0);
  const reasons: Record<string, number> = {};
  for (const f of frames) for (const r of f.decision.failed.split(',').filter(Boolean)) reasons[r] = (reasons[r] ?? 0) + 1;
  return {
    session: info.id,
    label: info.label,
    subject: info.subject,
    distanceCm: info.distanceCm,
    frames: frames.length,
    faceFrames: frames.filter((f) => f.face).length,
    liveFrames: frames.filter((f) => f.liveId > 0).length,
    accepted: firstLive !== undefined,
    decisionMs: firstLive ? (firstLive.timestampUs - t0) / 1000 : null,
    durationMs: (last - t0) / 1000,
    reasons,
  };
}

/** Replays one session with the ini's thresholds. */
export async function evaluateSession(config: Config, dir: string, info: SessionInfo): Promise<SessionDecision> {
  const camera = replayerFor(info)(path.join(dir, info.recording.path), config);
  const { frames, status } = await replayFrames({ ...config, camera });
  if (status.reportsDropped > 0) throw new Error(`session ${info.id}: ${status.reportsDropped} frame reports lost`);
  if (!frames.length) throw new SessionError(`session ${info.id}: no frame could be replayed${status.lastError ? ` (${status.lastError})` : ''}`);
  return decideSession(info, frames);
}

/**
 * Every session of `folder`, replayed in id order. Every session.json is read and its format checked before
 * the first replay, so a bad folder fails at once rather than after minutes of replay.
 */
export async function evaluateFolder(config: Config, folder: string, onSession?: (d: SessionDecision, i: number, n: number) => void): Promise<EvalResult> {
  const sessions = listSessions(folder);
  for (const s of sessions) replayerFor(s.info);
  const decisions: EvalResult['sessions'] = [];
  for (const [i, s] of sessions.entries()) {
    const d = await evaluateSession(config, s.dir, s.info);
    decisions.push({ ...d, format: s.info.recording.format, note: s.info.note });
    onSession?.(d, i, sessions.length);
  }
  return evalResult(config, folder, decisions);
}

/** The result over decisions gathered elsewhere (a benchmark evaluating folder after folder). */
export function evalResult(config: Config, folder: string, decisions: EvalResult['sessions']): EvalResult {
  return { folder: path.resolve(folder), formats: supportedFormats(), liveness: config.liveness, sessions: decisions, metrics: padMetrics(decisions) };
}
