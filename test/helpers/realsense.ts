// The realsense source's test bench: librealsense2 2.13 built once from the source the npm package
// node-librealsense ships (scripts/build-librealsense.js, cached like the models: Debian has no
// librealsense2), and the bag writer (native/test/realsense_bag_writer) that turns face-check recordings
// into RealSense .bag files through librealsense's own software_device and recorder, which the source then
// plays with rs2_config_enable_device_from_file as it would a recorded D435 session.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { cameraSourceNames } from '../../src/device/camera-catalog';
import { packageRoot } from '../../src/package-root';

interface CachedLibrary { root: string; library: string; include: string }
const builder = require(path.join(packageRoot(), 'scripts', 'build-librealsense')) as {
  cachedLibrary(): CachedLibrary | undefined;
  libraryRoot(): string;
};

/**
 * Why the RealSense tests cannot run here (undefined: they can); `installed` says whether librealsense2
 * itself is (then only this checkout is at fault, and the tests fail rather than skip). `source: false`
 * (the bag writer's own tests) needs the library only, not the realsense source in the addon.
 */
export function realsenseMissing({ source = true }: { source?: boolean } = {}): { reason: string; installed: boolean } | undefined {
  if (!builder.cachedLibrary()) {
    return { reason: `librealsense2 is not built here (npm run build:librealsense builds it once into ${builder.libraryRoot()})`, installed: false };
  }
  if (spawnSync('g++', ['--version'], { stdio: 'ignore' }).status !== 0) return { reason: 'g++ is not installed (the bag writer is compiled here)', installed: false };
  if (source && !cameraSourceNames().includes('realsense')) {
    return { reason: 'the addon was built without librealsense2\'s headers (node scripts/fetch-assets.js headers, then npm run build:native)', installed: true };
  }
  return undefined;
}

/** The cached librealsense2.so.2 (absolute), for `[camera.realsense] library = <path>`. */
export function realsenseLibrary(): string {
  const cached = builder.cachedLibrary();
  if (!cached) throw new Error('librealsense2 is not built (npm run build:librealsense)');
  return cached.library;
}

const WRITER_HEADERS = ['native/core/camera/recording.h', 'native/core/camera/camera.h', 'native/core/status.h'];

/**
 * The bag writer program, compiled on first use against the cached library's headers and linked to it
 * (rpath: it runs without LD_LIBRARY_PATH); kept beside the library, keyed by its sources' hash.
 */
export function bagWriter(): string {
  const cached = builder.cachedLibrary();
  if (!cached) throw new Error('librealsense2 is not built (npm run build:librealsense)');
  const root = packageRoot();
  const sources = (require(path.join(root, 'native', 'sources.json')) as Record<string, string[]>).test_realsense_bag_writer;
  const hash = crypto.createHash('sha256');
  for (const file of [...sources, ...WRITER_HEADERS]) hash.update(file).update(fs.readFileSync(path.join(root, file)));
  const dir = path.join(cached.root, `bag-writer-${hash.digest('hex').slice(0, 16)}`);
  const program = path.join(dir, 'bag_writer');
  if (fs.existsSync(program)) return program;
  const scratch = fs.mkdtempSync(`${dir}.building-`);
  try {
    const libDir = path.dirname(cached.library);
    const r = spawnSync('g++', ['-std=gnu++17', '-O2', '-isystem', cached.include, `-I${path.join(root, 'native')}`,
      ...sources.map((s) => path.join(root, s)), '-o', path.join(scratch, 'bag_writer'),
      `-L${libDir}`, '-lrealsense2', `-Wl,-rpath,${libDir}`, '-lpthread'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`cannot build the bag writer: ${r.stderr || r.error}`);
    try {
      fs.renameSync(scratch, dir);
    } catch (err) {
      if (!fs.existsSync(program)) throw err;  // another process built the same one first
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return program;
}

export interface BagOptions {
  depthUnits?: 0.001 | 0.0001;
  stereoProfile?: boolean;
  separateDepthCamera?: boolean;
  noDepth?: boolean;
  seed?: number;
  realtime?: boolean;
}

function bagArgs(o: BagOptions): string[] {
  return [
    ...(o.depthUnits ? ['--depth-units', String(o.depthUnits)] : []),
    ...(o.stereoProfile ? ['--stereo-profile'] : []),
    ...(o.separateDepthCamera ? ['--separate-depth-camera'] : []),
    ...(o.noDepth ? ['--no-depth'] : []),
    ...(o.seed !== undefined ? ['--seed', String(o.seed)] : []),
    ...(o.realtime ? ['--realtime'] : []),
  ];
}

function run(args: string[], timeoutMs: number): string {
  const r = spawnSync(bagWriter(), args, { encoding: 'utf8', timeout: timeoutMs });
  if (r.status !== 0) throw new Error(`bag_writer ${args.join(' ')}: ${r.signal ? `killed by ${r.signal}` : `exit ${r.status}`}: ${r.stderr}`);
  return r.stdout;
}

/** Writes the face-check recording `recording` as the RealSense bag `bag`. */
export function writeBag(recording: string, bag: string, options: BagOptions = {}): { depth_frames: number; colour_frames: number; fps: number } {
  return JSON.parse(run([recording, bag, ...bagArgs(options)], 300_000));
}

export interface StreamTally {
  frames: number;
  distinct_timestamps: number;
  recorded_timestamps: number;
  hardware_clock: number;
  exact: number;
  frame_numbers_increase: boolean;
  /** indices of recorded frames that did not come back (the first 20) */
  missing: number[];
}

/** What `bag_writer --verify` found playing the bag back (see bag_writer.cpp). */
export interface BagReport {
  device: string;
  sensors: string[];
  depth_units: number;
  depth_sensor: boolean;
  baseline_mm: number;
  streams: { stream: string; format: string; fps: number; intrinsics: { width: number; height: number; fx: number; fy: number; cx: number; cy: number } }[];
  depth_to_colour_m: [number, number, number] | null;
  recorded: { frames: number; depth_frames: number };
  first_frame: boolean;
  ended: boolean;
  /** frames delivered a second time (read before --verify seeks back to the start; counted once) */
  repeats: number;
  depth: StreamTally;
  colour: StreamTally;
  depth_vs_recording: { compared: number; within_tolerance: number; holes: number; below_min_range: number; max_error_mm: number };
}

/** Plays `bag` back through librealsense and compares it with `recording` (written with `options`). */
export function verifyBag(recording: string, bag: string, options: BagOptions = {}): BagReport {
  return JSON.parse(run(['--verify', recording, bag, ...bagArgs(options)], 300_000));
}
