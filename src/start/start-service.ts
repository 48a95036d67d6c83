// Starting and stopping the service, on either storage backend: error table, engine, store, galleries (from
// the backend's gallery source, ./gallery-sources.ts), first API key, HTTP listener.
import fs from 'node:fs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/types';
import type { FaceEngine } from '../engine/types';
import { ErrorCatalog } from '../errors';
import { buildApp } from '../http/app';
import { stopSnapshotReadAhead } from '../matching/snapshot/read-ahead';
import { templateModelId } from '../engine/template-spec';
import type { DeviceCamera } from '../device/camera';
import { cameraForStart, engineForStart } from './early-start';
import { warnWhenCameraAbsent } from '../device/camera-start-check';
import { logOptions } from '../ops/log-options';
import { closeWhenIdle, drain, ensureFirstKey, type RunningService, type StartOptions } from './service-lifecycle';
import { lmdbGallerySource, postgresGallerySource, type GallerySource } from './gallery-sources';
import { openBackend, type OpenedBackend } from '../storage/open-backend';
import type { DeviceLicence } from '../licensing/device/device-licence';
import { checkDeviceLicenceConfig, startDeviceLicence, stopReportMs } from '../licensing/device/device-licence-setup';
import { checkCameraConfig } from '../device/camera-settings';

export { ensureFirstKey, FIRST_KEY_FILE, stdoutIsJournal } from './service-lifecycle';
export type { RunningService, StartOptions } from './service-lifecycle';

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  if (config.storage.backend === 'postgres' && config.server.mode !== 'cloud') {
    throw new Error('[storage] backend = postgres serves cloud mode only');
  }
  // A configuration that will be refused is refused before anything (the store folder, its key) is created.
  checkDeviceLicenceConfig(config);
  if (config.server.mode === 'device') checkCameraConfig(config);
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const errors = opts.errors ?? new ErrorCatalog();
  // The engine's models load and the camera opens (device probing, its photos decoded) while the store opens
  // and the galleries load: start-up takes the longest of them, not their sum. Under `face-check serve`
  // both began before the program's modules loaded (./ops/early-start.ts).
  const engineReady = opts.engine ? Promise.resolve(opts.engine) : engineForStart();
  const cameraReady: Promise<DeviceCamera | undefined> =
    !opts.camera && config.server.mode === 'device' && config.camera.source !== 'none'
      ? cameraForStart(config) : Promise.resolve(undefined);
  // Awaited below or in the clean-up; a failure of either is handled there, never left unhandled.
  engineReady.catch(() => undefined);
  cameraReady.catch(() => undefined);
  let logger: FastifyBaseLogger | undefined;
  let engine: FaceEngine | undefined;
  let backend: OpenedBackend | undefined;
  let source: GallerySource | undefined;
  let loading: Promise<unknown> | undefined;
  // Device mode: the configured camera's capture pipeline (src/device), unless the caller brings one.
  let ownCamera: DeviceCamera | undefined;
  let licence: DeviceLicence | undefined;
  try {
    // LMDB's own reads must not queue behind the snapshots' read-ahead (./matching/snapshot/read-ahead.ts).
    if (config.storage.backend !== 'postgres') stopSnapshotReadAhead();
    backend = await openBackend(config.storage, 'serve');
    const { store } = backend;
    source = backend.kind === 'lmdb'
      ? lmdbGallerySource(backend.store.lmdb, config) : postgresGallerySource(backend.store, config, () => logger);
    // The galleries load while the engine loads its models: the model id is known from the manifest first.
    const expectedModel = opts.engine?.modelId ?? templateModelId();
    const load = source.load(expectedModel);
    loading = load.catch(() => undefined);  // awaited below
    // Device mode (LMDB only): the licence is checked with the cloud before a first key is made or the port
    // opens (a failed check throws LicenceStartError).
    if (config.server.mode === 'device' && backend.kind === 'lmdb') {
      const lmdb = backend.store.lmdb;
      licence = await startDeviceLicence(config, { persons: () => lmdb.persons.count(), usage: lmdb.deviceUsage, print });
    }
    engine = await engineReady;
    let loaded = await load;
    if (engine.modelId !== expectedModel) loaded = await source.load(engine.modelId);
    if (loaded.stale > 0) {
      print(`face-check: ${loaded.stale} person(s) have templates of another model and cannot match until "face-check reindex" runs`);
    }
    ownCamera = await cameraReady;
    // This node's own files (the first key's file under a service manager, packages) stay in [storage] path.
    fs.mkdirSync(config.storage.path, { recursive: true, mode: 0o700 });
    await ensureFirstKey(store, config.storage.path, print);
    const app = await buildApp({
      config, engine, store, errors, galleries: source.galleries, galleryFeed: source.feed, galleryCache: source.galleryCache, licence,
      camera: opts.camera ?? ownCamera,
      logger: opts.logger ?? logOptions(config.log.level),
    });
    logger = app.log;
    app.log.info(loaded.summary, 'galleries loaded');
    const address = await app.listen({ host: config.server.host, port: config.server.port });
    const storage = backend.kind === 'postgres' ? 'postgres' : config.storage.path;
    app.log.info({ mode: config.server.mode, persons: loaded.loaded, storage }, 'face-check ready');
    const stopCameraCheck = ownCamera ? warnWhenCameraAbsent(ownCamera, app.log) : undefined;
    source.begin(app.log);
    const [openBackendRef, openSource, openEngine] = [backend, source, engine];
    return {
      app, store, engine, address,
      close: async () => {
        stopCameraCheck?.();
        await drain(app, config.server.drain_timeout_ms);
        // No request runs any more: the gallery source stops (LMDB's changed snapshots written, bounded by
        // snapshot_stop_timeout_s) while the licence, camera and engine close, so the stop takes the longer of
        // the two and stays within the service manager's stop timeout (src/install/service-install.ts).
        const sourceStopped = openSource.stop();
        // Usage not yet acknowledged goes with one last check if the cloud answers in time; else the next start sends it.
        await licence?.close({ reportWithinMs: stopReportMs(config) });
        await ownCamera?.close();
        await closeWhenIdle(openEngine);
        await sourceStopped;
        await openBackendRef.close();
        // A clean stop's last line: the camera, engine and store above all closed.
        app.log.info({ camera: ownCamera ? 'closed' : 'none' }, 'stopped');
      },
    };
  } catch (err) {
    await loading;  // it reads the store closed below
    await source?.stop().catch(() => undefined);
    await licence?.close();
    await (ownCamera ?? (await cameraReady.catch(() => undefined)))?.close();
    await backend?.close().catch(() => undefined);
    if (!opts.engine) await (engine ?? (await engineReady.catch(() => undefined)))?.close().catch(() => undefined);
    throw err;
  }
}
