// [camera] and [liveness] keys: defaults, parsing, relations, and what reaches the native pipeline.
import t from 'tap';

import { ConfigError, parseConfig } from '../src/config/load';
import { livenessOptions, nativeCameraOptions } from '../src/device/camera';
import { cameraAddon } from '../src/device/native-camera';
import { demoPhotos, deviceConfig } from './helpers/device';

t.test('defaults', async (t) => {
  const c = parseConfig('', '/x');
  t.equal(c.camera.source, 'none');
  t.equal(c.camera.scenario, 'live');
  t.equal(c.camera.workers, 1);
  t.equal(c.liveness.recency_ms, 1000, 'spec 8: 1 second');
  t.equal(c.liveness.face_key_ttl_s, 60);
  t.equal(c.liveness.min_nose_relief_mm, 6);
  t.equal(c.liveness.allow_colour_only, false);
});

t.test('values are parsed, paths resolved against the ini folder', async (t) => {
  const c = parseConfig([
    '[camera]', 'source = replay', 'replay_path = rec', 'photos = a.jpg, faces/', 'realtime = false', 'fx = 580',
    '[liveness]', 'min_nose_relief_mm = 7.5', 'require_blink = true', 'window_frames = 8', 'min_pass_frames = 6',
  ].join('\n'), '/etc/fc');
  t.equal(c.camera.replay_path, '/etc/fc/rec');
  t.equal(c.camera.photos, '/etc/fc/a.jpg,/etc/fc/faces');
  t.equal(c.camera.realtime, false);
  t.equal(c.camera.fx, 580);
  t.equal(c.liveness.min_nose_relief_mm, 7.5);
  t.equal(c.liveness.require_blink, true);
  const native = livenessOptions(c.liveness);
  t.equal(native.minNoseReliefMm, 7.5);
  t.equal(native.requireBlink, true);
  t.equal(native.windowFrames, 8);
  t.equal(Object.values(native).filter((v) => v === undefined).length, 0, 'every [liveness] threshold reaches the pipeline');
});

t.test('bad values and relations stop start-up naming the key', async (t) => {
  const cases: [string, RegExp][] = [
    ['[liveness]\nrequire_blink = yes\n', /\[liveness\] require_blink: expected true or false/],
    ['[liveness]\nmin_depth_coverage = 1.5\n', /\[liveness\] min_depth_coverage/],
    ['[liveness]\nwindow_frames = 3\nmin_pass_frames = 4\n', /\[liveness\] min_pass_frames: must not exceed/],
    ['[liveness]\nmin_face_width_mm = 200\nmax_face_width_mm = 100\n', /\[liveness\] min_face_width_mm/],
    ['[camera]\nsource = replay\n', /\[camera\] replay_path: is required/],
    ['[camera]\nfreenect_depth = mm\n', /\[camera\] freenect_depth/],
    ['[camera]\nworkers = 0\n', /\[camera\] workers/],
  ];
  for (const [text, error] of cases) {
    t.throws(() => parseConfig(text, '/x'), ConfigError);
    t.throws(() => parseConfig(text, '/x'), error, text.trim());
  }
});

t.test('a bad scenario is refused when the camera opens', async (t) => {
  const config = deviceConfig({ camera: { source: 'synthetic', scenario: 'live:2, selfie:1' } });
  const options = await nativeCameraOptions(config, { photos: await demoPhotos() });
  await t.rejects(cameraAddon.openCamera(options), /unknown kind/);
  config.camera.scenario = 'live:-1';
  await t.rejects(cameraAddon.openCamera(await nativeCameraOptions(config, { photos: await demoPhotos() })), /positive number/);
  config.camera.scenario = 'live';
  await t.rejects(cameraAddon.openCamera(await nativeCameraOptions(config, { photos: [{ data: new Uint8Array(3 * 64 * 64), width: 64, height: 64 }] })),
    /no usable face/, 'photos without a usable face');
  t.rejects(nativeCameraOptions(deviceConfig()), /source = none/);
});
