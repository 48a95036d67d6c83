// The freenect source through libfreenect's own replay library, fakenect: a recording the test writes in
// fakenect's format (INDEX.txt, r-*.ppm colour, d-*.pgm 11-bit disparity) is played by the real
// libfreenect code path of the addon (dlopen of libfreenect.so.0.5, which LD_LIBRARY_PATH points at the
// fakenect build). Needs Debian's libfreenect-dev (build) and libfreenect-bin/libfreenect0.5 (fakenect).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { resolveOrtLibrary } from '../../src/engine/ort-library';
import { recordCamera } from '../../src/device/record';
import { packageRoot } from '../../src/package-root';
import { tempDir } from '../helpers/app';
import { cameraSourceNames } from '../../src/device/camera-catalog';
import { demoPhotos, deviceConfig } from '../helpers/device';

const FAKENECT_DIRS = [process.env.FAKENECT_LIB_DIR, '/usr/lib/x86_64-linux-gnu/fakenect', '/usr/lib/aarch64-linux-gnu/fakenect',
  '/usr/lib/arm-linux-gnueabihf/fakenect', '/usr/local/lib/fakenect', '/usr/lib/fakenect'].filter(Boolean) as string[];
const fakenectDir = FAKENECT_DIRS.find((d) => fs.existsSync(path.join(d, 'libfreenect.so.0.5')));
const built = cameraSourceNames().includes('freenect');
const skip = !built ? { skip: 'the addon was built without libfreenect headers (apt-get install libfreenect-dev)' }
  : !fakenectDir ? { skip: 'fakenect not installed (apt-get install libfreenect-bin)' } : {};

// The child: opens the freenect source, reports every frame and status change as JSON lines.
const CHILD = `
const addon = require('node-gyp-build')(process.argv[1]);
const [modelDir, ortLibrary, ms] = process.argv.slice(2);
(async () => {
  const out = [];
  const cam = await addon.openCamera({ source: 'freenect', modelDir, ortLibrary, reconnectMs: 200, queueSize: 4096,
    sourceOptions: { depth: 'auto' }, onEvent: (e) => out.push(e.type === 'frame'
      ? { type: 'frame', sequence: e.sequence, face: e.face, live: e.decision.live, failed: e.decision.failed, width: e.depth.faceWidthMm }
      : { type: 'status', connected: e.connected, lastError: e.lastError }) });
  cam.start();
  const end = Date.now() + Number(ms);
  while (Date.now() < end && !(out.some((e) => e.type === 'frame') && out.some((e) => e.type === 'status' && !e.connected))) await new Promise((r) => setTimeout(r, 50));
  const status = cam.status();
  await cam.stop();
  process.stdout.write('RESULT ' + JSON.stringify({ status, events: out }) + '\\n');
})().catch((e) => { process.stdout.write('ERROR ' + e.message + '\\n'); process.exit(1); });
`;

t.test('freenect source through fakenect: live passes, print is refused, the end is a disconnect', skip, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rec = path.join(dir, 'kinect');
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'live:1.5,print:1.5', loop: false, realtime: false, seed: 4245001 } } } });
  await recordCamera(config, { dir: rec, frames: 90, format: 'fakenect' }, { photos: await demoPhotos() });
  const index = fs.readFileSync(path.join(rec, 'INDEX.txt'), 'utf8').trim().split('\n');
  t.equal(index.length, 180, 'fakenect index: a depth and a colour file per frame');
  t.match(index[0], /^d-1\.000000-0\.pgm$/);
  t.match(index[1], /^r-1\.000100-0\.ppm$/);
  t.equal(fs.statSync(path.join(rec, index[0])).size, 'P5 640 480 65535\n'.length + 640 * 480 * 2);

  const child = spawnSync(process.execPath, ['-e', CHILD, packageRoot(), path.join(packageRoot(), 'models'), resolveOrtLibrary(), '20000'], {
    env: { ...process.env, FAKENECT_PATH: rec, LD_LIBRARY_PATH: `${fakenectDir}${process.env.LD_LIBRARY_PATH ? `:${process.env.LD_LIBRARY_PATH}` : ''}` },
    encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20,
  });
  const line = child.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  t.ok(line, `child reported (${child.stdout.split('\n').find((l) => l.startsWith('ERROR')) ?? child.stderr.slice(-500)})`);
  if (!line) return;
  const { events } = JSON.parse(line.slice(7)) as { events: { type: string; sequence?: number; face?: boolean; live?: boolean; failed?: string; connected?: boolean; lastError?: string }[] };
  const frames = events.filter((e) => e.type === 'frame');
  t.ok(frames.length >= 60, `most of the 90 frames were analysed (${frames.length})`);
  const live = frames.filter((f) => f.sequence! < 45);
  const print = frames.filter((f) => f.sequence! >= 46);
  t.ok(live.filter((f) => f.live).length >= live.length / 2, 'the recorded live face passes through libfreenect');
  t.notOk(print.some((f) => f.live), 'the recorded print never passes');
  t.ok(print.filter((f) => f.face).every((f) => /flat|nose-relief/.test(f.failed!)), 'refused by depth evidence');
  const statuses = events.filter((e) => e.type === 'status');
  t.ok(statuses.some((s) => s.connected), 'connected');
  t.ok(statuses.some((s) => !s.connected && /Kinect/.test(s.lastError!)), 'the end of the recording is reported as a disconnect');
});

t.test('freenect without a device (fakenect without a recording): not connected, no crash', skip, async (t) => {
  const child = spawnSync(process.execPath, ['-e', CHILD, packageRoot(), path.join(packageRoot(), 'models'), resolveOrtLibrary(), '1500'], {
    env: { ...process.env, FAKENECT_PATH: '', LD_LIBRARY_PATH: fakenectDir }, encoding: 'utf8', timeout: 60_000,
  });
  const line = child.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  t.ok(line, 'the process survives');
  if (!line) return;
  const { status } = JSON.parse(line.slice(7));
  t.equal(status.connected, false);
  t.match(status.lastError, /fakenect library without a recording/);
});
