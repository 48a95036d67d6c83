// Starting and stopping the service: error table, engine, store, galleries, first API key, HTTP listener.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from './config/types';
import { createEngine } from './engine';
import type { FaceEngine } from './engine/types';
import { ErrorCatalog } from './errors';
import { buildApp } from './http/app';
import { Galleries } from './matching/galleries';
import { snapshotPlaceOf } from './matching/snapshot/place';
import type { RestoreReport } from './matching/snapshot/restore';
import { SnapshotScheduler } from './matching/snapshot/scheduler';
import { templateModelId } from './engine/template-spec';
import { DEFAULT_ACCOUNT } from './services/auth';
import type { LiveFaceSource } from './device/live-face-source';
import { DeviceCamera } from './device/camera';
import { nativeErrorTable } from './native';
import { logOptions } from './ops/log-options';
import { writeKeyFileAtomically } from './storage/crypto/key-file';
import { openStore, type Store } from './storage/store';
import { lockStore, type StoreLock } from './storage/process-lock';
import type { DeviceLicence } from './licensing/device-licence';
import { startDeviceLicence } from './licensing/device-licence-setup';

export interface RunningService {
  app: FastifyInstance;
  store: Store;
  engine: FaceEngine;
  /** The address the server listens on, e.g. http://127.0.0.1:8080. */
  address: string;
  close(): Promise<void>;
}

export interface StartOptions {
  engine?: FaceEngine;
  errors?: ErrorCatalog;
  camera?: LiveFaceSource;
  logger?: FastifyServerOptions['logger'];
  /** Where the one-time messages go (the first API key). */
  print?: (line: string) => void;
}

/** Where the first API key is written when the program runs under a service manager (see ensureFirstKey). */
export const FIRST_KEY_FILE = 'first-api-key.txt';

/**
 * True when stdout is systemd's journal: JOURNAL_STREAM names the journal's stream as device:inode, and
 * only counts when stdout is that very stream (a child whose stdout is a pipe inherits the variable).
 */
export function stdoutIsJournal(env: NodeJS.ProcessEnv = process.env): boolean {
  const [dev, ino] = (env.JOURNAL_STREAM ?? '').split(':');
  if (!dev || !ino) return false;
  try {
    const st = fs.fstatSync(1);
    return String(st.dev) === dev && String(st.ino) === ino;
  } catch {
    return false;
  }
}

/**
 * On first start (no key ever stored) creates a full-access key of account "default" and shows it once. When
 * stdout is the journal, which keeps every line, the key goes to <storage path>/first-api-key.txt instead
 * (0600, in the 0700 store folder) and only that path is printed.
 */
export async function ensureFirstKey(store: Store, print: (line: string) => void, now = new Date(),
  toJournal = stdoutIsJournal()): Promise<string | undefined> {
  if (!store.apiKeys.isEmpty()) return undefined;
  const { key, record } = await store.apiKeys.create(DEFAULT_ACCOUNT, 'full', 'first start', now.toISOString());
  print(`face-check: first start - created API key ${record.keyId} (account ${record.accountId}, role ${record.role}).`);
  if (toJournal) {
    const file = path.join(store.path, FIRST_KEY_FILE);
    writeKeyFileAtomically(file, Buffer.from(`Api-Key: ${key}\n`, 'utf8'));
    print(`face-check: stdout is the journal, which keeps every line: the key is in ${file} (0600);`);
    print('face-check: store it, then delete that file (face-check keys create makes more).');
  } else {
    print(`face-check: Api-Key: ${key}`);
    print('face-check: it is shown only this once; store it now (face-check keys create makes more).');
  }
  return key;
}

/**
 * Closes the engine once its last analysis has finished: a client that hung up leaves its analysis
 * running after the HTTP server has closed, and the engine refuses to close under it. Bounded (30 s).
 */
async function closeWhenIdle(engine: FaceEngine): Promise<void> {
  for (let waited = 0; ; waited += 50) {
    try {
      await engine.close();
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SERVICE_UNAVAILABLE' || waited >= 30_000) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Stops accepting connections and lets in-flight requests finish ([server] drain_timeout_ms at most; new
 * requests on open connections get 503 meanwhile, http/plugins/overload.ts). Past the bound the remaining
 * connections are cut.
 */
async function drain(app: FastifyInstance, timeoutMs: number): Promise<void> {
  const closing = app.close();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), timeoutMs); });
  const timedOut = await Promise.race([closing.then(() => false), expired]);
  clearTimeout(timer);
  if (timedOut) {
    app.log.warn({ drain_timeout_ms: timeoutMs }, 'requests still running after the drain timeout: closing their connections');
    app.server.closeAllConnections();
    await closing;
  }
}

/** The start's gallery outcome for the log: counts and reasons, never a person. */
function restoreSummary(r: RestoreReport): object {
  const reasons: Record<string, number> = {};
  for (const a of r.accounts) if (a.reason) reasons[a.reason] = (reasons[a.reason] ?? 0) + 1;
  return {
    persons: r.loaded,
    from_snapshot: r.accounts.filter((a) => a.source === 'snapshot').length,
    rebuilt: r.accounts.filter((a) => a.source === 'rebuild').length,
    replayed: r.accounts.reduce((n, a) => n + a.replayed, 0),
    ms: Math.round(r.timings.total),
    ...(Object.keys(reasons).length ? { rebuild_reasons: reasons } : {}),
  };
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const errors = opts.errors ?? new ErrorCatalog(nativeErrorTable());
  // The engine's models load and the camera opens (device probing, its photos decoded) while the store opens
  // and the index is rebuilt: start-up takes the longest of them, not their sum.
  const engineReady = opts.engine ? Promise.resolve(opts.engine) : createEngine();
  const cameraReady: Promise<DeviceCamera | undefined> =
    !opts.camera && config.server.mode === 'device' && config.camera.source !== 'none'
      ? DeviceCamera.open(config) : Promise.resolve(undefined);
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
    store = await openStore(config.storage.path, { keyFile: config.storage.key_file });
    // The galleries start (from their snapshots, else from the store) while the engine loads its models: the
    // model id is known from the manifest before they load (createEngine's default template).
    const persons = store.persons;
    galleries = Galleries.forStore(persons);
    const place = config.index.snapshot ? snapshotPlaceOf(store) : undefined;
    const expectedModel = opts.engine?.modelId ?? templateModelId();
    restoring = galleries.restore(persons, expectedModel, place);
    restoring.catch(() => undefined);  // awaited below
    // Device mode: the licence is checked with the cloud before a first key is made or the port opens
    // (a failed check throws LicenceStartError).
    if (config.server.mode === 'device') licence = await startDeviceLicence(config, { persons: () => persons.count(), print });
    engine = await engineReady;
    let restored: RestoreReport = await restoring;
    if (engine.modelId !== expectedModel) restored = await galleries.restore(persons, engine.modelId, place);
    const { loaded, stale } = restored;
    if (stale > 0) {
      print(`face-check: ${stale} person(s) have templates of another model and cannot match until "face-check reindex" runs`);
    }
    ownCamera = await cameraReady;
    await ensureFirstKey(store, print);
    const app = await buildApp({
      config, engine, store, errors, galleries, camera: opts.camera ?? ownCamera, licence,
      logger: opts.logger ?? logOptions(config.log.level),
    });
    app.log.info(restoreSummary(restored), 'galleries loaded');
    // Writes the snapshots (when [index] snapshot is on) and keeps the change log bounded either way.
    const snapshots = new SnapshotScheduler({
      galleries, persons, exclusive: store.exclusive, modelId: engine.modelId, place, log: app.log,
      settings: {
        intervalS: config.index.snapshot_interval_s, minChanges: config.index.snapshot_min_changes,
        stopTimeoutS: config.index.snapshot_stop_timeout_s, changeLogKeep: config.index.change_log_keep,
      },
    });
    const address = await app.listen({ host: config.server.host, port: config.server.port });
    app.log.info({ mode: config.server.mode, persons: loaded, storage: config.storage.path }, 'face-check ready');
    snapshots.begin(restored);
    const openStoreRef = store;
    const openEngine = engine;
    const openGalleries = galleries;
    return {
      app, store, engine, address,
      close: async () => {
        await drain(app, config.server.drain_timeout_ms);
        // No request runs any more: the changed accounts' snapshots are written (bounded) before the store closes.
        await snapshots.stop();
        await licence?.close();
        await ownCamera?.close();
        await closeWhenIdle(openEngine);
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
