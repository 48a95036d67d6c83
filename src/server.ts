// Starting and stopping the service: error table, engine, store, galleries, first API key, HTTP listener.
import type { Config } from './config/types';
import type { FaceEngine } from './engine/types';
import { ErrorCatalog } from './errors';
import { buildApp } from './http/app';
import { Galleries } from './matching/galleries';
import { LocalGalleryFeed } from './matching/local-gallery-feed';
import { snapshotPlaceOf } from './matching/snapshot/place';
import { stopSnapshotReadAhead } from './matching/snapshot/read-ahead';
import type { RestoreReport } from './matching/snapshot/restore';
import { SnapshotScheduler } from './matching/snapshot/scheduler';
import { templateModelId } from './engine/template-spec';
import type { DeviceCamera } from './device/camera';
import { nativeErrorTable } from './native';
import { cameraForStart, engineForStart, snapshotImportsForStart } from './ops/early-start';
import { warnWhenCameraAbsent } from './device/camera-start-check';
import { logOptions } from './ops/log-options';
import { closeWhenIdle, drain, ensureFirstKey, type RunningService, type StartOptions } from './ops/service-lifecycle';
import { startCloudNode } from './cloud-node';
import { lmdbAsyncStore } from './storage/lmdb/async-store';
import { openStore, type Store } from './storage/lmdb/store';
import { lockStore, type StoreLock } from './storage/lmdb/process-lock';
import type { DeviceLicence } from './licensing/device-licence';
import { checkDeviceLicenceConfig, startDeviceLicence, stopReportMs } from './licensing/device-licence-setup';
import { checkCameraConfig } from './device/camera-settings';

export { ensureFirstKey, FIRST_KEY_FILE, stdoutIsJournal } from './ops/service-lifecycle';
export type { RunningService, StartOptions } from './ops/service-lifecycle';

/** The start's gallery outcome for the log: counts and reasons, never a person. */
function restoreSummary(r: RestoreReport): object {
  const reasons: Record<string, number> = {};
  for (const a of r.accounts) if (a.reason) reasons[a.reason] = (reasons[a.reason] ?? 0) + 1;
  return {
    persons: r.loaded,
    from_snapshot: r.accounts.filter((a) => a.source === 'snapshot').length,
    rebuilt: r.accounts.filter((a) => a.source === 'rebuild').length,
    replayed: r.accounts.reduce((n, a) => n + a.replayed, 0),
    opened_early: r.accounts.filter((a) => a.early).length,
    ...(r.earlySkipped ? { not_opened_early: r.earlySkipped } : {}),
    ms: Math.round(r.timings.total),
    ...(Object.keys(reasons).length ? { rebuild_reasons: reasons } : {}),
  };
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  // Several cloud nodes over one database: its own start (./cloud-node.ts); the rest of this function is LMDB's.
  if (config.storage.backend === 'postgres') return startCloudNode(config, opts);
  // A configuration that will be refused is refused before anything (the store folder, its key) is created.
  checkDeviceLicenceConfig(config);
  if (config.server.mode === 'device') checkCameraConfig(config);
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const errors = opts.errors ?? new ErrorCatalog(nativeErrorTable());
  // The engine's models load and the camera opens (device probing, its photos decoded) while the store opens
  // and the index is rebuilt: start-up takes the longest of them, not their sum. Under `face-check serve`
  // both began before the program's modules loaded (./ops/early-start.ts).
  const engineReady = opts.engine ? Promise.resolve(opts.engine) : engineForStart();
  const cameraReady: Promise<DeviceCamera | undefined> =
    !opts.camera && config.server.mode === 'device' && config.camera.source !== 'none'
      ? cameraForStart(config) : Promise.resolve(undefined);
  // Awaited below or in the clean-up; a failure of either is handled there, never left unhandled.
  engineReady.catch(() => undefined);
  cameraReady.catch(() => undefined);
  let engine: FaceEngine | undefined;
  let store: Store | undefined;
  let storeLock: StoreLock | undefined;
  // Device mode: the configured camera's capture pipeline (src/device), unless the caller brings one.
  let ownCamera: DeviceCamera | undefined;
  let licence: DeviceLicence | undefined;
  let galleries: Galleries | undefined;
  let restoring: Promise<RestoreReport> | undefined;
  try {
    storeLock = lockStore(config.storage.path, 'serve');
    stopSnapshotReadAhead();  // the store's own reads must not queue behind it (./matching/snapshot/read-ahead.ts)
    store = await openStore(config.storage.path, { keyFile: config.storage.key_file });
    // The galleries start (from their snapshots, else from the store) while the engine loads its models: the
    // model id is known from the manifest before they load (createEngine's default template).
    const persons = store.persons;
    galleries = Galleries.forStore(persons);
    const place = config.index.snapshot ? snapshotPlaceOf(store) : undefined;
    const expectedModel = opts.engine?.modelId ?? templateModelId();
    restoring = galleries.restore(persons, expectedModel, place, { early: snapshotImportsForStart(config.storage.path) });
    restoring.catch(() => undefined);  // awaited below
    // Device mode: the licence is checked with the cloud before a first key is made or the port opens
    // (a failed check throws LicenceStartError).
    if (config.server.mode === 'device') licence = await startDeviceLicence(config, { persons: () => persons.count(), usage: store.deviceUsage, print });
    engine = await engineReady;
    let restored: RestoreReport = await restoring;
    if (engine.modelId !== expectedModel) restored = await galleries.restore(persons, engine.modelId, place);
    const { loaded, stale } = restored;
    if (stale > 0) {
      print(`face-check: ${stale} person(s) have templates of another model and cannot match until "face-check reindex" runs`);
    }
    ownCamera = await cameraReady;
    await ensureFirstKey(lmdbAsyncStore(store), config.storage.path, print);
    const openStoreRef = store;
    // The store's own commits reach the galleries through its change log, as a PostgreSQL node's do.
    const feed = new LocalGalleryFeed(galleries, persons, engine.modelId);
    const app = await buildApp({
      config, engine, store: lmdbAsyncStore(store), errors, galleries, galleryFeed: feed, camera: opts.camera ?? ownCamera, licence,
      logger: opts.logger ?? logOptions(config.log.level),
    });
    app.log.info(restoreSummary(restored), 'galleries loaded');
    // Writes the snapshots (when [index] snapshot is on) and keeps the change log bounded either way.
    const snapshots = new SnapshotScheduler({
      // A snapshot is taken under the account's lock with every committed change in its gallery.
      galleries, persons,
      exclusive: (accountId, fn) => openStoreRef.exclusive(accountId, async () => { await feed.catchUp(); return fn(); }),
      modelId: engine.modelId, place, log: app.log,
      settings: {
        intervalS: config.index.snapshot_interval_s, minChanges: config.index.snapshot_min_changes,
        stopTimeoutS: config.index.snapshot_stop_timeout_s, changeLogKeep: config.index.change_log_keep,
      },
    });
    const address = await app.listen({ host: config.server.host, port: config.server.port });
    app.log.info({ mode: config.server.mode, persons: loaded, storage: config.storage.path }, 'face-check ready');
    const stopCameraCheck = ownCamera ? warnWhenCameraAbsent(ownCamera, app.log) : undefined;
    snapshots.begin(restored);
    const openEngine = engine;
    const openGalleries = galleries;
    return {
      app, store: lmdbAsyncStore(store), engine, address,
      close: async () => {
        stopCameraCheck?.();
        await drain(app, config.server.drain_timeout_ms);
        // No request runs any more: the changed accounts' snapshots are written (bounded by
        // snapshot_stop_timeout_s) while the licence, camera and engine close, so the stop takes the longer of
        // the two and stays within the service manager's stop timeout (src/ops/service-install.ts).
        const snapshotsWritten = snapshots.stop();
        // Usage not yet acknowledged goes with one last check if the cloud answers in time; else the next start sends it.
        await licence?.close({ reportWithinMs: stopReportMs(config) });
        await ownCamera?.close();
        await closeWhenIdle(openEngine);
        await snapshotsWritten;
        openGalleries.close();
        await openStoreRef.close();
        storeLock?.release();
        // A clean stop's last line: the camera, engine and store above all closed.
        app.log.info({ camera: ownCamera ? 'closed' : 'none' }, 'stopped');
      },
    };
  } catch (err) {
    await restoring?.catch(() => undefined);  // it reads the store closed below
    galleries?.close();
    await licence?.close();
    await (ownCamera ?? (await cameraReady.catch(() => undefined)))?.close();
    await store?.close();
    storeLock?.release();
    if (!opts.engine) await (engine ?? (await engineReady.catch(() => undefined)))?.close().catch(() => undefined);
    throw err;
  }
}
