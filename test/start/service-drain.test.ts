// Stopping a device as systemd does: `face-check serve` (this repository's source, run as a child) in device
// mode with the real-time synthetic camera and a development licence. SIGTERM, and SIGINT alike, while a
// request on a live capture's faceKey is in flight: new connections are refused, the request completes on
// the capture (the camera is closed only after the drain, or the faceKey would be unknown), the process
// logs its clean stop and exits 0, and it leaves no lock behind: the store opens and locks afterwards
// without taking over a stale lock.
import type { ChildProcess } from 'node:child_process';
import { spawnListening } from '../helpers/spawn-listening';
import { connectRefused, heldRecognition } from '../helpers/held-request';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { lockStore } from '../../src/storage/lmdb/process-lock';
import { openStore } from '../../src/storage/lmdb/store';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { repoRoot } from '../helpers/errors';
import { samplePhotos } from '../helpers/sample-photos';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Generous: the engine's models load and the camera warms up on a shared 2-core machine. */
const LIVE_FACE_TIMEOUT_MS = 120_000;
const EXIT_BOUND_MS = 30_000;

interface Device {
  child: ChildProcess;
  port: number;
  store: string;
  output(): string;
  exited: Promise<number | null>;
}

async function startDevice(t: Test): Promise<Device> {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'face-check.ini');
  fs.writeFileSync(ini, [
    '[server]', 'mode = device', 'host = 127.0.0.1', 'port = 0', 'drain_timeout_ms = 20000',
    '[storage]', 'path = ./store',
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`,
    '[camera]', 'source = synthetic', '[camera.synthetic]', 'scenario = live', 'loop = true', 'realtime = true', 'seed = 4243001',
    `photos = ${samplePhotos().join(',')}`,
    '[licence]', 'development = true', '',
  ].join('\n'));
  // The TypeScript loader flags tap gave this process let the child run src/cli/main.ts, the program's entry.
  const { child, port, output, exited } = await spawnListening(process.execPath,
    [...process.execArgv, path.join(repoRoot, 'src', 'cli', 'main.ts'), 'serve', '--config', ini], { cwd: dir });
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return { child, port, store: path.join(dir, 'store'), output, exited };
}

/** A faceKey of the camera's live face (the synthetic person passes liveness after a few seconds). */
async function liveFaceKey(port: number): Promise<string> {
  const end = Date.now() + LIVE_FACE_TIMEOUT_MS;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/person/face/`, { headers: { 'api-key': BOOTSTRAP_KEY } });
    const body = await res.json() as { faceKey?: string };
    if (res.status === 200 && body.faceKey) return body.faceKey;
    if (Date.now() > end) throw new Error(`no live face in ${LIVE_FACE_TIMEOUT_MS} ms: last answer ${res.status}`);
    await sleep(200);
  }
}

function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); });
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} with a camera: the request on a live capture completes, then camera and store close, exit 0`, async (t) => {
    const device = await startDevice(t);
    const faceKey = await liveFaceKey(device.port);
    const held = heldRecognition(device.port, JSON.stringify({ faceKey }));
    await held.start();
    device.child.kill(signal);

    let refused = false;
    for (let i = 0; i < 100 && !refused; i++) {
      refused = await connectRefused(device.port);
      if (!refused) await sleep(20);
    }
    t.ok(refused, 'new connections are refused while draining');
    t.equal(device.child.exitCode, null, 'still running while the request is in flight');

    held.finish();
    await within(EXIT_BOUND_MS, 'the answer', held.closed);
    // 410 RF_001: the capture was found and analysed, nobody is enrolled. A camera closed before the drain
    // would have dropped its faceKeys: 400 R_003 "faceKey: unknown or expired".
    t.match(held.answer(), /^HTTP\/1\.1 410 /, 'the in-flight request was answered on the live capture');
    t.match(held.answer(), /\{"code":"RF_001","message":"No person matched"\}$/);

    t.equal(await within(EXIT_BOUND_MS, 'the exit', device.exited), 0, 'exit code 0');
    const output = device.output();
    const stopping = output.indexOf(`"signal":"${signal}"`);
    const stopped = output.search(/"camera":"closed"[^\n]*"msg":"stopped"/);
    t.ok(stopping >= 0, 'the stop was logged with its signal');
    t.ok(stopped > stopping, "the clean stop's last line, after the drain: camera, engine and store closed");
    if (!(stopped > stopping)) t.comment(output.slice(-3000));

    // Released, not left for the next start to take over as stale.
    t.notOk(fs.existsSync(path.join(device.store, 'face-check.lock')), 'no lock file left');
    const lock = lockStore(device.store, 'test');
    const store = await openStore(device.store);
    t.notOk(store.apiKeys.isEmpty(), 'the store opens with what the service wrote');
    await store.close();
    lock.release();
  });
}
