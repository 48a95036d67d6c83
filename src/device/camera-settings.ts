// The camera a device runs, checked against the addon's registry: [camera] source names a compiled source
// (or none), and every [camera.<source>] section holds only that source's options with valid values.
// Checked before a device creates anything, so a typo stops start-up with the section and key named; the
// addon checks the same description again when it opens the source.
import path from 'node:path';
import { ConfigError } from '../config/load';
import type { Config } from '../config/types';
import {
  cameraSourceNames, findCameraSource, sourceForRecording,
  type CameraOptionSpec, type CameraSourceDescription,
} from './camera-catalog';

export type CameraOptionValue = string | number | boolean;

export interface CameraSettings {
  /** The source that opens: the configured one, or the source that plays the replayed file (.oni). */
  source: CameraSourceDescription;
  /** Its options, every one present (defaults filled in), typed, paths absolute. */
  options: Record<string, CameraOptionValue>;
  /** The configured source's own options, checked (differs from `options` when a file plays through another source). */
  configured: { name: string; options: Record<string, CameraOptionValue> };
}

const FLAG_TRUE = new Set(['true', '1', 'yes', 'on']);
const FLAG_FALSE = new Set(['false', '0', 'no', 'off']);

/** One option's value from its ini text (or a typed value set in code), checked like the addon does. */
export function parseCameraOption(spec: CameraOptionSpec, given: CameraOptionValue, baseDir: string): CameraOptionValue {
  const raw = String(given).trim();
  switch (spec.type) {
    case 'flag':
      if (FLAG_TRUE.has(raw)) return true;
      if (FLAG_FALSE.has(raw)) return false;
      throw new Error('must be true or false');
    case 'choice':
      if (!spec.choices?.includes(raw)) throw new Error(`must be one of ${spec.choices?.join(', ')}`);
      return raw;
    case 'integer':
    case 'number': {
      const value = raw === '' ? NaN : Number(raw);
      if (!Number.isFinite(value) || (spec.type === 'integer' && !Number.isInteger(value))) {
        throw new Error(spec.type === 'integer' ? 'must be a whole number' : 'must be a number');
      }
      if (value < (spec.min ?? -Infinity) || value > (spec.max ?? Infinity)) throw new Error(`must be ${spec.min} to ${spec.max}`);
      return value;
    }
    case 'text':
      return spec.path ? resolvePaths(raw, baseDir) : raw;
  }
}

/** A path option: comma-separated paths, each resolved against the ini's folder. */
function resolvePaths(raw: string, baseDir: string): string {
  return raw.split(',').map((p) => p.trim()).filter(Boolean).map((p) => path.resolve(baseDir, p)).join(',');
}

/** A source's section checked: unknown keys refused, defaults filled in. */
function checkSection(source: CameraSourceDescription, given: Record<string, CameraOptionValue>, baseDir: string): Record<string, CameraOptionValue> {
  const settable = source.options.filter((o) => o.settable);
  const out: Record<string, CameraOptionValue> = {};
  for (const [key, value] of Object.entries(given)) {
    const spec = settable.find((o) => o.key === key);
    if (!spec) {
      throw new ConfigError(`[camera.${source.name}] ${key}`, `unknown key (known in [camera.${source.name}]: ${settable.map((o) => o.key).join(', ') || 'none'})`);
    }
    try {
      out[key] = parseCameraOption(spec, value, baseDir);
    } catch (err) {
      throw new ConfigError(`[camera.${source.name}] ${key}`, (err as Error).message);
    }
  }
  // Options the program sets itself are left to it (the addon refuses them from the ini).
  for (const spec of settable) if (!(spec.key in out)) out[spec.key] = parseCameraOption(spec, spec.default, baseDir);
  return out;
}

/**
 * The checked camera of a device configuration; undefined for [camera] source = none. Every
 * [camera.<source>] section is checked, not only the chosen one, so a typo in a section kept for later
 * is found now.
 */
export function checkCameraConfig(config: Config): CameraSettings | undefined {
  const c = config.camera;
  const names = cameraSourceNames();
  const checked = new Map<string, Record<string, CameraOptionValue>>();
  for (const [name, section] of Object.entries(c.sources)) {
    const source = findCameraSource(name);
    if (!source) throw new ConfigError(`[camera.${name}]`, `no such camera source in this build (it has: ${names.join(', ')})`);
    checked.set(name, checkSection(source, section, c.base_dir));
  }
  if (c.source === 'none') return undefined;
  const source = findCameraSource(c.source);
  if (!source) throw new ConfigError('[camera] source', `"${c.source}" is not a camera source of this build (it has: ${names.join(', ')}, or none)`);
  const options = checked.get(source.name) ?? checkSection(source, {}, c.base_dir);
  const configured = { name: source.name, options };
  if (source.name === 'replay') {
    const file = String(options.path);
    if (!file) throw new ConfigError('[camera.replay] path', 'is required when [camera] source = replay');
    // A file another source records (an OpenNI2 .oni) plays through that source, with its own section.
    const player = sourceForRecording(file);
    if (player) {
      const playerOptions = { ...(checked.get(player.name) ?? checkSection(player, {}, c.base_dir)) };
      playerOptions[player.recordingOption] = file;
      if (player.options.some((o) => o.key === 'loop')) playerOptions.loop = options.loop;
      return { source: player, options: playerOptions, configured };
    }
  }
  return { source, options, configured };
}

/** The frame rate a recording or count of seconds is taken at: the source's `fps` option, else 30. */
export function cameraFps(settings: CameraSettings | undefined): number {
  const fps = settings?.configured.options.fps;
  return typeof fps === 'number' && fps > 0 ? fps : 30;
}
