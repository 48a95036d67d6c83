// The liveness self-test of an integrator's own camera rig (ISO/IEC 30107-3):
//   face-check record --out <folder> --label <kind> [--subject S] [--distance-cm N] [--note T] [--session ID]
//                     [--frames N | --seconds S] [--config <file.ini>]
//     one labelled session of the configured camera into <folder>/<session-id>/
//   face-check liveness-eval <folder> [--config <file.ini>] [--json <file>] [--html <file>]
//     every session replayed through the device pipeline with the ini's [liveness] thresholds
import fs from 'node:fs';
import path from 'node:path';

import { evaluateFolder, supportedFormats } from '../device/liveness-eval';
import { livenessReportHtml } from '../device/liveness-report';
import { recordSession } from '../device/record-session';
import { KNOWN_LABELS, SessionError } from '../device/session';
import { cameraFps, checkCameraConfig } from '../device/camera-settings';
import { configOf, stringFlag, UsageError, type Args, type Io } from './args';

export const LIVENESS_USAGE = `  face-check record  [--config <file.ini>] --out <folder> --label live|print|print-bent|screen|cutout|mask|<own>
                     [--subject <id>] [--distance-cm N] [--note <text>] [--session <id>] [--frames N | --seconds S]
  face-check liveness-eval <folder> [--config <file.ini>] [--json <file>] [--html <file>]`;

const DEFAULT_FRAMES = 90;

function frameCount(args: Args, fps: number): number {
  const frames = stringFlag(args, 'frames');
  const seconds = stringFlag(args, 'seconds');
  if (frames !== undefined && seconds !== undefined) throw new UsageError('record: --frames or --seconds, not both');
  const n = frames !== undefined ? Number(frames) : seconds !== undefined ? Math.round(Number(seconds) * fps) : DEFAULT_FRAMES;
  if (!Number.isInteger(n) || n <= 0) throw new UsageError('record: --frames/--seconds must give a positive number of frames');
  return n;
}

/** `face-check record --label ...`: one labelled session into the --out folder of sessions. */
export async function recordSessionCommand(args: Args, io: Io): Promise<number> {
  const config = configOf(args);
  const folder = stringFlag(args, 'out');
  const label = stringFlag(args, 'label');
  if (!folder) throw new UsageError('record: --out <folder> is required');
  if (!label) throw new UsageError('record: --label is required for a session');
  const format = stringFlag(args, 'format');
  // A session is for liveness-eval: only the formats it replays.
  const formats = supportedFormats();
  if (format !== undefined && !formats.includes(format)) throw new UsageError(`record: sessions (--label) are recorded in ${formats.join(' or ')} (the formats liveness-eval replays)`);
  const distance = stringFlag(args, 'distance-cm');
  if (distance !== undefined && !/^\d+(\.\d+)?$/.test(distance)) throw new UsageError('record: --distance-cm must be a number of centimetres (e.g. 70)');
  let result;
  try {
    result = await recordSession(config, {
      folder, label,
      subject: stringFlag(args, 'subject'),
      distanceCm: distance === undefined ? undefined : Number(distance),
      note: stringFlag(args, 'note'),
      id: stringFlag(args, 'session'),
      format,
      frames: frameCount(args, cameraFps(checkCameraConfig(config))),
    });
  } catch (err) {
    // A bad label, subject, distance or id is the caller's usage; a camera failure is not.
    if (err instanceof SessionError && !/already exists|does not exist/.test(err.message)) throw new UsageError(err.message);
    throw err;
  }
  const { info, status, dir } = result;
  io.out(`recorded session ${info.id} (${info.label}${info.subject ? `, subject ${info.subject}` : ''}${info.distanceCm !== null ? `, ${info.distanceCm} cm` : ''}): ` +
    `${status.framesRecorded} frames of the ${config.camera.source} camera into ${dir}`);
  if (!(KNOWN_LABELS as readonly string[]).includes(info.label)) {
    io.out(`note: label ${info.label} is not one of ${KNOWN_LABELS.join(', ')}: liveness-eval counts it as an attack kind of its own`);
  }
  return 0;
}

/** `face-check liveness-eval <folder>`: JSON on stdout (or --json), optionally the HTML report. */
export async function livenessEvalCommand(args: Args, io: Io): Promise<number> {
  const folder = args.positional[1];
  if (!folder || args.positional.length > 2) throw new UsageError('liveness-eval needs one folder of sessions (face-check record --out <folder> --label ...)');
  const jsonFile = stringFlag(args, 'json');
  const htmlFile = stringFlag(args, 'html');
  const config = configOf(args);
  const result = await evaluateFolder(config, folder, (d, i, n) => {
    io.err(`liveness-eval: ${i + 1}/${n} ${d.session} (${d.label}): ${d.accepted ? `accepted after ${d.decisionMs} ms` : 'rejected'}`);
  });
  const json = JSON.stringify(result, null, 2);
  if (jsonFile) fs.writeFileSync(path.resolve(jsonFile), `${json}\n`);
  else io.out(json);
  if (htmlFile) fs.writeFileSync(path.resolve(htmlFile), livenessReportHtml(result));
  const m = result.metrics;
  const pct = (v: number | null) => (v === null ? 'n/a' : `${(100 * v).toFixed(2)} %`);
  const summary = [
    ...Object.entries(m.apcer).map(([kind, r]) => `APCER ${kind}: ${pct(r.rate)} (${r.errors}/${r.presentations})`),
    `worst-case APCER: ${m.worstCaseApcer ? `${pct(m.worstCaseApcer.rate)} (${m.worstCaseApcer.label})` : 'n/a'}`,
    `BPCER: ${pct(m.bpcer.rate)} (${m.bpcer.errors}/${m.bpcer.presentations})`,
    `wrongly decided: ${m.wronglyDecided.map((w) => `${w.session} (${w.label}: ${w.error})`).join(', ') || 'none'}`,
  ];
  // The summary goes where the JSON does not.
  for (const line of summary) (jsonFile ? io.out : io.err)(line);
  return 0;
}
