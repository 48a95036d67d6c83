// `face-check record`: writes a recording from any configured camera source, in the face-check format the
// replay source plays, in libfreenect's fakenect format, or in a camera SDK's own format written by the SDK's
// recorder (OpenNI2's .oni, RealSense's .bag: any source with a record_path option and that extension).
import fs from 'node:fs';
import path from 'node:path';

import type { Config } from '../config/types';
import { cameraAddon, type CameraStatus } from './native-camera';
import { nativeCameraOptions, type DeviceCameraOptions } from './camera';
import { cameraCatalog, sourceForRecording } from './camera-catalog';
import { checkCameraConfig } from './camera-settings';

export interface RecordOptions {
  /** Output folder (created; must not hold a recording yet), or the SDK recording's file (.oni, .bag). */
  dir: string;
  /** Frames to write. */
  frames: number;
  /** face-check, fakenect, or an SDK format named by its file extension (oni, bag). */
  format?: string;
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
  const sdk = sdkRecordingFormats().includes(format);
  if (sdk) {
    // The SDK's own recorder writes the device's own streams: only the source that plays such files has them.
    const writer = sourceForRecording(options.dir);
    if (!writer || nativeOptions.source !== writer.name || !writer.options.some((o) => o.key === 'record_path')) {
      throw new Error(`record: a ${path.extname(options.dir)} recording needs [camera] source = ${writer?.name ?? 'the camera that writes it'}`);
    }
    // The SDK's recorder records a camera: a source already playing one of its own files has nothing to add.
    const playing = checkCameraConfig(config)?.options[writer.recordingOption];
    if (typeof playing === 'string' && writer.recordingExtensions.some((ext) => playing.toLowerCase().endsWith(ext))) {
      throw new Error(`record: [camera.${writer.name}] ${writer.recordingOption} already plays the recording ${playing}: copy that file instead`);
    }
    if (fs.existsSync(options.dir)) throw new Error(`record: ${path.resolve(options.dir)} already exists`);
    nativeOptions.programOptions = { record_path: path.resolve(options.dir) };
    nativeOptions.maxFrames = options.frames;
  } else if (format === 'face-check' || format === 'fakenect') {
    nativeOptions.record = { dir: path.resolve(options.dir), format, frames: options.frames, stopAfter: true };
  } else {
    throw new Error(`record: unknown format ${format}`);
  }
  const handle = await cameraAddon.openCamera(nativeOptions);
  handle.start();
  const deadline = Date.now() + (options.timeoutMs ?? (options.frames / 5) * 1000 + 60_000);
  try {
    for (;;) {
      const s = handle.status();
      if (s.ended) {
        if (sdk) {
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

/** Formats a camera SDK's own recorder writes (the extension, without its dot): oni, bag. */
export function sdkRecordingFormats(): string[] {
  return cameraCatalog()
    .filter((s) => s.options.some((o) => o.key === 'record_path'))
    .flatMap((s) => s.recordingExtensions.map((ext) => ext.replace(/^\./, '').toLowerCase()));
}

/** Arguments of `face-check record --config <ini> --out <dir | file.oni | file.bag> [--frames N | --seconds S] [--format face-check|fakenect|oni|bag]`. */
export function parseRecordArgs(argv: string[], fps: number): RecordOptions & { config?: string } {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dir = get('out');
  if (!dir) throw new Error('record: --out <dir> is required');
  const seconds = get('seconds');
  const frames = get('frames') ? Number(get('frames')) : seconds ? Math.round(Number(seconds) * fps) : 90;
  const sdk = sdkRecordingFormats();
  const ext = path.extname(dir).replace(/^\./, '').toLowerCase();
  const format = get('format') ?? (sdk.includes(ext) ? ext : 'face-check');
  const formats = ['face-check', 'fakenect', ...sdk];
  if (!formats.includes(format)) throw new Error(`record: --format must be ${formats.join(', ')}`);
  // An SDK's file and its format go together: its recorder writes only its own file.
  if ((sdk.includes(format) || sdk.includes(ext)) && format !== ext) {
    const named = sdk.includes(ext) ? ext : format;
    throw new Error(`record: a .${named} output and --format ${named} go together`);
  }
  return { dir, frames, format, config: get('config') };
}
