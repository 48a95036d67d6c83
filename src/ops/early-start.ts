// What `face-check serve` starts before the rest of the program is loaded (bin/face-check.js calls it
// first; loading the program's modules takes ~0.3 s here and several times that on a board): the engine
// loads its models and a device's camera opens, both on the addons' threads, and the kernel reads the
// galleries' snapshot files (src/matching/snapshot/read-ahead.ts). The start proper (src/server.ts,
// src/cloud-node.ts) then takes the engine and the camera: a start waits for the longest of these and the
// modules' load instead of their sum. Light on purpose: the configuration, the engine, the camera and the
// addons only. Any failure here is left to the start proper, which reports it.
import { configOf, parseArgs } from '../cli/args';
import type { Config } from '../config/types';
import type { DeviceCamera } from '../device/camera';
import { createEngine } from '../engine';
import type { FaceEngine } from '../engine/types';
import { startSnapshotReadAhead } from '../matching/snapshot/read-ahead';
import { Prestarted } from './prestarted';

/** The default engine (createEngine() takes nothing from the configuration). */
const earlyEngine = new Prestarted<FaceEngine>();
/** A device's camera, opened for the configuration it was opened with. */
const earlyCamera = new Prestarted<DeviceCamera>();
const ENGINE = 'default';

/**
 * The camera's module, loaded when a camera is opened: it loads the image library (~60 ms here), which the
 * engine's early start must not wait for, nor a cloud node at all before its engine begins.
 */
function openCamera(config: Config): Promise<DeviceCamera> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../device/camera') as typeof import('../device/camera')).DeviceCamera.open(config);
}

/** For `serve`: starts loading the engine, a device's camera and an LMDB store's snapshot files; otherwise nothing. */
export function beginEarlyStart(argv: string[]): void {
  try {
    const args = parseArgs(argv);
    if (args.positional[0] !== 'serve' || args.flags.get('help')) return;
    const config = configOf(args);
    earlyEngine.begin(ENGINE, () => createEngine());
    if (config.server.mode === 'device' && config.camera.source !== 'none') {
      earlyCamera.begin(JSON.stringify(config), () => openCamera(config));
    }
    if (config.storage.backend === 'lmdb' && config.index.snapshot !== false) startSnapshotReadAhead(config.storage.path);
  } catch {
    // a bad command line or ini: the start proper says what is wrong
  }
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
