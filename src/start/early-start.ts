// What `face-check serve` starts before the rest of the program is loaded (bin/face-check.js calls it
// first; loading the program's modules takes a noticeable time, several times longer on a board): the engine
// loads its models, a device's camera opens and the galleries' snapshots are imported (or, where they cannot
// be yet, read ahead: src/matching/snapshot/early-import.ts), all on the addons' threads. The start proper
// (src/start/start-service.ts) then takes them: a start waits for the longest of these and the
// modules' load instead of their sum. Light on purpose: the configuration, the engine, the camera, the
// snapshots' key file and the addons only. Any failure here is left to the start proper, which reports it.
import path from 'node:path';

import type { Config } from '../config/types';
import type { DeviceCamera } from '../device/camera';
import { createEngine } from '../engine';
import { templateModelId } from '../engine/template-spec';
import type { FaceEngine } from '../engine/types';
import { beginSnapshotStart, type EarlySnapshotImports } from '../matching/snapshot/early-import';
import { DEFAULT_KEY_FILE } from '../storage/crypto/key-file';
import { Prestarted } from './prestarted';

/** The default engine (createEngine() takes nothing from the configuration). */
const earlyEngine = new Prestarted<FaceEngine>();
/** A device's camera, opened for the configuration it was opened with. */
const earlyCamera = new Prestarted<DeviceCamera>();
const ENGINE = 'default';
/** The galleries' snapshots being imported, for the store they were begun for (handed out once). */
let earlySnapshots: { storagePath: string; imports: EarlySnapshotImports } | undefined;

/**
 * The camera's module, loaded when a camera is opened: it loads the image library (docs/benchmarks.md), which the
 * engine's early start must not wait for, nor a cloud node at all before its engine begins.
 */
function openCamera(config: Config): Promise<DeviceCamera> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../device/camera') as typeof import('../device/camera')).DeviceCamera.open(config);
}

/** Starts loading the engine, a device's camera and an LMDB store's snapshots for the service `config` runs. */
export function beginEarlyStart(config: Config): void {
  earlyEngine.begin(ENGINE, () => createEngine());
  if (config.server.mode === 'device' && config.camera.source !== 'none') {
    earlyCamera.begin(JSON.stringify(config), () => openCamera(config));
  }
  beginEarlySnapshots(config);
}

/** An LMDB store's snapshots, imported (or read ahead) from here on: ../matching/snapshot/early-import.ts. */
export function beginEarlySnapshots(config: Config): void {
  if (config.storage.backend !== 'lmdb' || config.index.snapshot === false) return;
  const storagePath = config.storage.path;
  const keyFile = path.resolve(config.storage.key_file || path.join(storagePath, DEFAULT_KEY_FILE));
  void earlySnapshots?.imports.discardRest();  // begun before and never taken
  earlySnapshots = { storagePath, imports: beginSnapshotStart(storagePath, keyFile, templateModelId()) };
}

/** The snapshot imports begun since beginEarlyStart for the store at `storagePath` (handed out once). */
export function snapshotImportsForStart(storagePath: string): EarlySnapshotImports | undefined {
  const begun = earlySnapshots;
  if (!begun) return undefined;
  earlySnapshots = undefined;
  if (begun.storagePath === storagePath) return begun.imports;
  void begun.imports.discardRest();
  return undefined;
}

/** The engine loading since beginEarlyStart (handed out once), else a new createEngine(). */
export function engineForStart(): Promise<FaceEngine> {
  return earlyEngine.take(ENGINE, () => createEngine(), (engine) => engine.close());
}

/** The camera opened since beginEarlyStart for this same configuration (handed out once), else a new one. */
export function cameraForStart(config: Config): Promise<DeviceCamera> {
  return earlyCamera.take(JSON.stringify(config), () => openCamera(config), (camera) => camera.close());
}

/** Whether an engine or a camera begun early waits to be taken (for the tests). */
export function earlyStartWaiting(): { engine: boolean; camera: boolean } {
  return { engine: earlyEngine.waiting, camera: earlyCamera.waiting };
}
