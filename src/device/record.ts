// `face-check record`: writes a recording from any configured camera source (synthetic, replay,
// freenect, openni2), in the face-check format the replay source plays, in libfreenect's fakenect format,
// or (openni2 only) as an OpenNI2 .oni file written by OpenNI2's own recorder.
import fs from 'node:fs';
import path from 'node:path';

import type { Config } from '../config/types';
import { cameraAddon, type CameraStatus } from './native-camera';
import { nativeCameraOptions, type DeviceCameraOptions } from './camera';
import { sourceForRecording } from './camera-catalog';

export interface RecordOptions {
  /** Output folder (created; must not hold a recording yet), or the .oni file (format oni). */
  dir: string;
  /** Frames to write. */
  frames: number;
  format?: 'face-check' | 'fakenect' | 'oni';
  /** Give up after this long without finishing (default: frames / 5 fps + 60 s). */
  timeoutMs?: number;
}

/** Records `frames` frames of the configured camera; resolves with the final status. */
export async function recordCamera(config: Config, options: RecordOptions, deviceOptions: DeviceCameraOptions = {}): Promise<CameraStatus> {
  if (!(options.frames > 0)) throw new Error('record: frames must be a positive number');
  const parent = path.dirname(path.resolve(options.dir));
  if (!fs.existsSync(parent)) throw new Error(`record: ${parent} does not exist`);
  const nativeOptions = await nativeCameraOptions(config, deviceOptions);
  nativeOptions.process = false;
  const format = options.format ?? 'face-check';
  const oni = format === 'oni';
  if (format === 'oni') {
    // The SDK's own recorder writes the device's own streams: only the source that plays such files has them.
    const writer = sourceForRecording(options.dir);
    if (!writer || nativeOptions.source !== writer.name || !writer.options.some((o) => o.key === 'record_path')) {
      throw new Error(`record: a ${path.extname(options.dir)} recording needs [camera] source = ${writer?.name ?? 'openni2'}`);
    }
    if (fs.existsSync(options.dir)) throw new Error(`record: ${path.resolve(options.dir)} already exists`);
    nativeOptions.programOptions = { record_path: path.resolve(options.dir) };
    nativeOptions.maxFrames = options.frames;
  } else {
    nativeOptions.record = { dir: path.resolve(options.dir), format, frames: options.frames, stopAfter: true };
  }
  const handle = await cameraAddon.openCamera(nativeOptions);
  handle.start();
  const deadline = Date.now() + (options.timeoutMs ?? (options.frames / 5) * 1000 + 60_000);
  try {
    for (;;) {
      const s = handle.status();
      if (s.ended) {
        if (oni) {
          if (s.framesCaptured < options.frames) throw new Error(`record: stopped after ${s.framesCaptured} frames: ${s.lastError || 'source ended'}`);
          return { ...s, framesRecorded: s.framesCaptured };
        }
        if (s.framesRecorded < options.frames) throw new Error(`record: stopped after ${s.framesRecorded} frames: ${s.lastError || 'source ended'}`);
        return s;
      }
      if (Date.now() > deadline) throw new Error(`record: timed out after ${s.framesRecorded} of ${options.frames} frames (${s.lastError || 'no error'})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await handle.stop();
  }
}

/** Arguments of `face-check record --config <ini> --out <dir | file.oni> [--frames N | --seconds S] [--format face-check|fakenect|oni]`. */
export function parseRecordArgs(argv: string[], fps: number): RecordOptions & { config?: string } {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dir = get('out');
  if (!dir) throw new Error('record: --out <dir> is required');
  const seconds = get('seconds');
  const frames = get('frames') ? Number(get('frames')) : seconds ? Math.round(Number(seconds) * fps) : 90;
  const format = (get('format') ?? (/\.oni$/i.test(dir) ? 'oni' : 'face-check')) as RecordOptions['format'];
  if (format !== 'face-check' && format !== 'fakenect' && format !== 'oni') throw new Error('record: --format must be face-check, fakenect or oni');
  if ((format === 'oni') !== /\.oni$/i.test(dir)) throw new Error('record: a .oni output and --format oni go together');
  return { dir, frames, format, config: get('config') };
}
