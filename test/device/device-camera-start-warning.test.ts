// A device whose camera does not connect says so in its log soon after the start, with what to check for
// that source; one whose camera works says nothing of the kind. Through `face-check serve` as a process.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CAMERA_START_GRACE_MS, warnWhenCameraAbsent } from '../../src/device/camera-start-check';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { startServiceProcess } from '../helpers/service-process';

function deviceIni(dir: string, camera: string[]): string {
  const file = path.join(dir, 'device.ini');
  fs.writeFileSync(file, ['[server]', 'mode = device', 'host = 127.0.0.1', 'port = 0', '[licence]', 'development = true',
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`, '[storage]', 'path = ./store', '[camera]', ...camera].join('\n'));
  return file;
}

const warnings = (output: string) => output.split('\n').filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l) as { level: number; msg: string; camera?: string }).filter((l) => l.level === 40 && l.camera !== undefined);

t.test('a camera that does not connect: one warning naming the source, the error and what to check', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const service = await startServiceProcess(deviceIni(dir, ['source = openni2', '[camera.openni2]', 'library = /nonexistent/libOpenNI2.so.0']), 'real');
  try {
    await new Promise((r) => setTimeout(r, CAMERA_START_GRACE_MS + 2_000));
    const found = warnings(service.output());
    t.equal(found.length, 1, service.output().slice(-2000));
    t.match(found[0]?.msg, /^camera openni2 not connected 5 s after the start \(OpenNI2 not available: .*nonexistent.*\): is the camera plugged in, is libOpenNI2 installed/);
    t.match(found[0]?.msg, /GET \/person\/face\/ answers R_400 until it connects$/);
  } finally {
    t.equal(await service.stop(), 0);
  }
});

t.test('a camera that works: no warning', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const service = await startServiceProcess(deviceIni(dir, ['source = synthetic']), 'real');
  try {
    await new Promise((r) => setTimeout(r, CAMERA_START_GRACE_MS + 2_000));
    t.same(warnings(service.output()), [], 'nothing said of the camera');
  } finally {
    t.equal(await service.stop(), 0);
  }
});

t.test('the warning is cancelled by a stop, and not given for a recording that ended', async (t) => {
  const lines: string[] = [];
  const log = { warn: (_f: Record<string, unknown>, message: string) => { lines.push(message); } };
  const absent = { status: () => ({ connected: false, ended: false, source: 'freenect', lastError: '' }) };
  const cancel = warnWhenCameraAbsent(absent, log, 50);
  cancel();
  warnWhenCameraAbsent({ status: () => ({ connected: false, ended: true, source: 'replay', lastError: '' }) }, log, 50);
  warnWhenCameraAbsent(absent, log, 50);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(lines.length, 1);
  t.match(lines[0], /^camera freenect not connected 0.05 s after the start: is the Kinect plugged in/);
});
