// The package's public entry: the service, its configuration and the face engine.
export { buildApp, type AppDeps } from './http/app';
export { startService, type RunningService, type StartOptions } from './server';
export { loadConfig, parseConfig, defaultConfig, ConfigError } from './config/load';
export type { Config } from './config/types';
export { createEngine, cosine } from './engine';
export type * from './engine/types';
