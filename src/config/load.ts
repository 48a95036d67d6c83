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
  for (const section of sectionNames) {
    const schema = configSchema[section] as Record<string, { default: unknown; parse: (raw: string) => unknown }>;
    const given = (parsed[section] ?? {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(given)) {
      const name = `[${section}] ${key}`;
      if (isPlainObject(value)) throw new ConfigError(`[${section}.${key}]`, 'unknown section', file);
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
  result.storage.path = path.resolve(baseDir, result.storage.path);
  if (result.storage.key_file) result.storage.key_file = path.resolve(baseDir, result.storage.key_file);
  if (result.camera.replay_path) result.camera.replay_path = path.resolve(baseDir, result.camera.replay_path);
  if (result.camera.photos) {
    result.camera.photos = result.camera.photos.split(',').map((p) => p.trim()).filter(Boolean)
      .map((p) => path.resolve(baseDir, p)).join(',');
  }
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
  if (config.camera.source === 'replay' && !config.camera.replay_path) {
    throw new ConfigError('[camera] replay_path', 'is required when [camera] source = replay', file);
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
