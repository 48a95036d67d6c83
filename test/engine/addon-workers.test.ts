// The addon loaded in a worker thread and in the main thread at the same time: each environment has its own
// class constructors and open-camera list (native/addon/addon_data.h), so both can use it side by side, and
// the worker ending (its environment torn down with a camera and an engine still open) leaves the main
// thread's addon working.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';

import { native } from '../../src/native';
import { resolveOrtLibrary } from '../../src/engine/ort-library';
import { packageRoot } from '../../src/package-root';

interface Addon {
  nativeStatuses: string[];
  index: {
    createCollection(name: string, dim: number): boolean;
    dropCollection(name: string): boolean;
    write(name: string, key: string, template: Float32Array, mode: string): Promise<boolean>;
    search(name: string, queries: Float32Array, options?: object): Promise<{ keys: string[] }[]>;
  };
  openCamera(options: object): Promise<{ textures: number; status(): { lastError: string }; stop(): Promise<void> }>;
  createEngine(options: object): Promise<{ analyze(p: Uint8Array, w: number, h: number, o?: object): Promise<{ faces: unknown[] }>; close(): Promise<void> }>;
}

const addon = native as unknown as Addon;
const root = packageRoot();
const modelDir = path.join(root, 'models');
let ortLibrary: string | undefined;
try {
  ortLibrary = resolveOrtLibrary();
} catch {
  ortLibrary = undefined;
}
// A replay camera that is never started needs neither models nor a recording, yet makes a camera handle.
const idleCamera = { source: 'replay', process: false, sourceOptions: { path: path.join(root, 'no-such-recording') } };

// Runs in the worker: loads the addon itself and uses every part that makes objects of an addon class.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData.nodeGypBuild)(workerData.root);
(async () => {
  const { collection, idleCamera, modelDir, ortLibrary } = workerData;
  addon.index.createCollection(collection, 4);
  await addon.index.write(collection, 'w', new Float32Array([0, 1, 0, 0]), 'insert');
  const hits = await addon.index.search(collection, new Float32Array([0, 1, 0, 0]), { k: 1 });
  const camera = await addon.openCamera(idleCamera);
  let faces = -1;
  if (ortLibrary) {
    const engine = await addon.createEngine({ modelDir, ortLibrary });
    faces = (await engine.analyze(new Uint8Array(64 * 64 * 3), 64, 64, { embed: false })).faces.length;
  }
  // The camera and the engine stay open: the worker's teardown has to deal with them.
  parentPort.postMessage({ rows: addon.nativeStatuses.length, hit: hits[0].keys[0], textures: camera.textures, faces });
})().catch((err) => parentPort.postMessage({ error: String(err && err.stack || err) }));
`;

async function useInMainThread(t: Test, label: string): Promise<void> {
  t.ok(addon.nativeStatuses.length > 0, `${label}: nativeStatuses readable`);
  const collection = `addon-workers-main-${process.pid}`;
  t.equal(addon.index.createCollection(collection, 4), true, `${label}: collection created`);
  await addon.index.write(collection, label, new Float32Array([1, 0, 0, 0]), 'upsert');
  const hits = await addon.index.search(collection, new Float32Array([1, 0, 0, 0]), { k: 1 });
  t.equal(hits[0].keys[0], label, `${label}: index search`);
  addon.index.dropCollection(collection);
  const camera = await addon.openCamera(idleCamera);
  t.equal(camera.textures, 0, `${label}: camera handle made`);
  t.type(camera.status().lastError, 'string', `${label}: camera status`);
  await camera.stop();
  if (ortLibrary) {
    const engine = await addon.createEngine({ modelDir, ortLibrary });
    const { faces } = await engine.analyze(new Uint8Array(64 * 64 * 3), 64, 64, { embed: false });
    t.equal(faces.length, 0, `${label}: engine handle made and used`);
    await engine.close();
  }
}

t.test('worker thread and main thread use the addon side by side; the main thread outlives the worker', async (t) => {
  // Collections are process-wide (core/index registry), so the worker's has a name of its own.
  const workerCollection = `addon-workers-worker-${process.pid}`;
  t.teardown(() => addon.index.dropCollection(workerCollection));
  await useInMainThread(t, 'before the worker');

  const worker = new Worker(workerSource, {
    eval: true,
    workerData: {
      root, nodeGypBuild: require.resolve('node-gyp-build', { paths: [root] }), collection: workerCollection,
      idleCamera, modelDir, ortLibrary,
    },
  });
  const fromWorker = new Promise<{ rows: number; hit: string; textures: number; faces: number; error?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  // Both threads at once: the main thread works while the worker loads and uses its own copy.
  const [result] = await Promise.all([fromWorker, useInMainThread(t, 'while the worker runs')]);
  t.notOk(result.error, result.error ?? 'worker ran');
  t.equal(result.rows, addon.nativeStatuses.length, 'the worker read the same native statuses');
  t.equal(result.hit, 'w', 'the worker searched its collection');
  t.equal(result.textures, 0, 'the worker made a camera handle');
  if (ortLibrary) t.equal(result.faces, 0, 'the worker made and used an engine handle');

  await worker.terminate();
  await useInMainThread(t, 'after the worker ended');
});
