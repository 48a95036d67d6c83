// The package's public entry: the service, its configuration and the face engine.
export { buildApp, type AppDeps } from './http/app';
export { startService, type RunningService, type StartOptions } from './start/start-service';
export { loadConfig, parseConfig, defaultConfig, ConfigError } from './config/load';
export type { Config } from './config/types';
export { createEngine } from './engine';
// `cosine` stays the public name of the one template dot product.
export { dot as cosine } from './matching/dot';
export type * from './engine/types';
