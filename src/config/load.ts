// Reads the ini file into a checked Config. Unknown sections or keys and bad values stop start-up with a
// ConfigError naming `[section] key`, so a typo never silently falls back to a default.
import fs from 'node:fs';
import path from 'node:path';
import ini from 'ini';
import { configSchema } from './schema';
import type { Config } from './types';

export class ConfigError extends Error {
  constructor(readonly key: string, reason: string, readonly file?: string) {
    super(`${file ? `${file}: ` : ''}${key}: ${reason}`);
    this.name = 'ConfigError';
  }
}

type Sections = keyof Config;
const sectionNames = Object.keys(configSchema) as Sections[];

/** The configuration with every default (storage.path resolved against `baseDir`). */
export function defaultConfig(baseDir: string = process.cwd()): Config {
  return parseConfig('', baseDir);
}

/** Parses ini text; relative paths are resolved against baseDir (the ini file's folder). */
export function parseConfig(textValue: string, baseDir: string, file?: string): Config {
  let parsed: Record<string, unknown>;
  try {
    parsed = ini.parse(textValue) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError('(file)', `not a readable ini file: ${(err as Error).message}`, file);
  }
  for (const [name, value] of Object.entries(parsed)) {
    if (!isPlainObject(value)) throw new ConfigError(name, 'key outside any section (put it under a [section])', file);
    if (!(sectionNames as string[]).includes(name)) {
      throw new ConfigError(`[${name}]`, `unknown section (known: ${sectionNames.join(', ')})`, file);
    }
  }

  const config = {} as Record<string, Record<string, unknown>>;
  const cameraSources: Record<string, Record<string, string>> = {};
  for (const section of sectionNames) {
    const schema = configSchema[section] as Record<string, { default: unknown; parse: (raw: string) => unknown }>;
    const given = (parsed[section] ?? {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(given)) {
      const name = `[${section}] ${key}`;
      if (isPlainObject(value) && section === 'camera') {
        cameraSources[key] = cameraSection(key, value, file);
        continue;
      }
      if (isPlainObject(value)) throw new ConfigError(`[${section}.${key}]`, 'unknown section', file);
      if (section === 'camera' && key in MOVED_CAMERA_KEYS) {
        throw new ConfigError(name, `moved: write it as ${MOVED_CAMERA_KEYS[key]} (each camera source has its own section; docs/device.md)`, file);
      }
      if (!(key in schema)) {
        throw new ConfigError(name, `unknown key (known in [${section}]: ${Object.keys(schema).join(', ')})`, file);
      }
      if (Array.isArray(value)) throw new ConfigError(name, 'a single value is expected, not a list', file);
      const raw = String(value).trim(); // ini turns true/false into booleans; every parser reads text
      try {
        out[key] = schema[key].parse(raw);
      } catch (err) {
        throw new ConfigError(name, (err as Error).message, file);
      }
    }
    for (const [key, entry] of Object.entries(schema)) if (!(key in out)) out[key] = entry.default;
    config[section] = out;
  }
  const result = config as unknown as Config;
  result.camera.sources = cameraSources;
  result.camera.base_dir = path.resolve(baseDir);
  result.storage.path = path.resolve(baseDir, result.storage.path);
  if (result.storage.key_file) result.storage.key_file = path.resolve(baseDir, result.storage.key_file);
  if (result.licence.public_key_file) result.licence.public_key_file = path.resolve(baseDir, result.licence.public_key_file);
  if (result.licence.machine_id_file) result.licence.machine_id_file = path.resolve(baseDir, result.licence.machine_id_file);
  if (result.licensing.package_file) result.licensing.package_file = path.resolve(baseDir, result.licensing.package_file);
  checkRelations(result, file);
  return result;
}

/** Loads and checks an ini file. */
export function loadConfig(file: string): Config {
  let textValue: string;
  try {
    textValue = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError('(file)', `cannot read the configuration: ${(err as Error).message}`, file);
  }
  return parseConfig(textValue, path.dirname(path.resolve(file)), file);
}

function checkRelations(config: Config, file?: string): void {
  if (config.storage.backend === 'postgres') {
    if (config.server.mode === 'device') {
      throw new ConfigError('[storage] backend', 'postgres is for cloud nodes only; a device keeps its data in LMDB (backend = lmdb)', file);
    }
    if (!/^postgres(ql)?:\/\/./.test(config.storage.postgres_url)) {
      throw new ConfigError('[storage] postgres_url', 'is required when [storage] backend = postgres: postgres://user@host:port/database', file);
    }
    if (!config.storage.key_file) {
      throw new ConfigError('[storage] key_file', 'is required when [storage] backend = postgres: every node needs the same key file', file);
    }
  }
  if (config.liveness.min_pass_frames > config.liveness.window_frames) {
    throw new ConfigError('[liveness] min_pass_frames', 'must not exceed [liveness] window_frames', file);
  }
  if (config.liveness.min_face_width_mm > config.liveness.max_face_width_mm) {
    throw new ConfigError('[liveness] min_face_width_mm', 'must not exceed [liveness] max_face_width_mm', file);
  }
  if (config.image.max_pixels_in_flight < config.image.max_pixels) {
    throw new ConfigError('[image] max_pixels_in_flight', 'must be at least [image] max_pixels', file);
  }
  if (config.quality.min_brightness > config.quality.max_brightness) {
    throw new ConfigError('[quality] min_brightness', 'must not exceed [quality] max_brightness', file);
  }
  if (config.licence.key && (!config.licence.server_url || !config.licence.public_key_file)) {
    throw new ConfigError(config.licence.server_url ? '[licence] public_key_file' : '[licence] server_url',
      'is required when [licence] key is set (the installation command writes all three)', file);
  }
  if (config.licence.key && config.licence.development) {
    throw new ConfigError('[licence] development', 'must be false when a licence key is set', file);
  }
  if (config.licensing.document_valid_seconds < config.licensing.check_interval_seconds) {
    throw new ConfigError('[licensing] document_valid_seconds', 'must be at least [licensing] check_interval_seconds', file);
  }
  if (config.quality.min_image_brightness > config.quality.max_image_brightness) {
    throw new ConfigError('[quality] min_image_brightness', 'must not exceed [quality] max_image_brightness', file);
  }
}

/** [camera] keys of earlier versions and where each lives now. */
const MOVED_CAMERA_KEYS: Record<string, string> = {
  scenario: '[camera.synthetic] scenario', scenario_loop: '[camera.synthetic] loop', seed: '[camera.synthetic] seed',
  fps: '[camera.synthetic] fps (or [camera.replay] fps)', realtime: '[camera.synthetic] realtime (or [camera.replay] realtime)',
  photos: '[camera.synthetic] photos', replay_path: '[camera.replay] path', replay_loop: '[camera.replay] loop',
  freenect_library: '[camera.freenect] library', freenect_depth: '[camera.freenect] depth', freenect_device: '[camera.freenect] device',
  openni2_library: '[camera.openni2] library', openni2_uri: '[camera.openni2] uri', openni2_width: '[camera.openni2] width',
  openni2_height: '[camera.openni2] height', openni2_fps: '[camera.openni2] fps', openni2_registration: '[camera.openni2] registration',
};

/** A [camera.<source>] section as text; its keys and values are checked against the addon's registry at start. */
function cameraSection(name: string, value: Record<string, unknown>, file?: string): Record<string, string> {
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new ConfigError(`[camera.${name}]`, 'not a camera source name', file);
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (isPlainObject(v) || Array.isArray(v)) throw new ConfigError(`[camera.${name}] ${key}`, 'a single value is expected', file);
    out[key] = String(v).trim();
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
