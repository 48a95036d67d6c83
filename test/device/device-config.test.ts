// [camera] and [liveness] keys: defaults, parsing, relations, and what reaches the native pipeline.
import t from 'tap';

import { ConfigError, parseConfig } from '../../src/config/load';
import { livenessOptions, nativeCameraOptions } from '../../src/device/camera';
import { checkCameraConfig } from '../../src/device/camera-settings';
import { cameraAddon } from '../../src/device/native-camera';
import { demoPhotos, deviceConfig } from '../helpers/device';

t.test('defaults', async (t) => {
  const c = parseConfig('', '/x');
  t.equal(c.camera.source, 'none');
  t.same(c.camera.sources, {}, 'no source section');
  t.equal(c.camera.workers, 1);
  t.equal(c.liveness.recency_ms, 1000, 'spec 8: 1 second');
  t.equal(c.liveness.face_key_ttl_s, 60);
  t.equal(c.liveness.min_nose_relief_mm, 6);
  t.equal(c.liveness.allow_colour_only, false);
});

t.test('values are parsed, paths resolved against the ini folder', async (t) => {
  const c = parseConfig([
    '[camera]', 'source = replay', 'fx = 580',
    '[camera.replay]', 'path = rec', 'realtime = false',
    '[camera.synthetic]', 'photos = a.jpg, faces/',
    '[liveness]', 'min_nose_relief_mm = 7.5', 'require_blink = true', 'window_frames = 8', 'min_pass_frames = 6',
  ].join('\n'), '/etc/fc');
  const camera = checkCameraConfig(c);
  t.equal(camera?.source.name, 'replay');
  t.same(camera?.options, { path: '/etc/fc/rec', loop: true, realtime: false, fps: 30 }, 'typed, defaults filled in, the path resolved');
  t.equal(checkCameraConfig({ ...c, camera: { ...c.camera, source: 'synthetic' } })?.options.photos, '/etc/fc/a.jpg,/etc/fc/faces');
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
    ['[camera]\nworkers = 0\n', /\[camera\] workers/],
    ['[camera]\nfreenect_depth = raw\n', /\[camera\] freenect_depth: moved: write it as \[camera.freenect\] depth/],
    ['[camera]\nscenario = live\n', /\[camera\] scenario: moved: write it as \[camera.synthetic\] scenario/],
  ];
  for (const [text, error] of cases) {
    t.throws(() => parseConfig(text, '/x'), ConfigError);
    t.throws(() => parseConfig(text, '/x'), error, text.trim());
  }
  // Checked against the addon's registry (at start, before anything is created).
  const camera: [string, RegExp][] = [
    ['[camera]\nsource = replay\n', /\[camera.replay\] path: is required/],
    ['[camera]\nsource = freenect\n[camera.freenect]\ndepth = mm\n', /\[camera.freenect\] depth: must be one of auto, registered, raw/],
    ['[camera]\nsource = kinect2\n', /\[camera\] source: "kinect2" is not a camera source of this build \(it has: synthetic, replay/],
    ['[camera]\nsource = none\n[camera.openni2]\nuri2 = x\n', /\[camera.openni2\] uri2: unknown key \(known in \[camera.openni2\]: library, uri, width/],
    ['[camera]\nsource = none\n[camera.openni2]\nrecord_path = x.oni\n', /\[camera.openni2\] record_path: unknown key/],
    ['[camera]\nsource = openni2\n[camera.openni2]\nwidth = 9000\n', /\[camera.openni2\] width: must be 16 to 8192/],
    ['[camera]\nsource = openni2\n[camera.openni2]\nfps = 29.97\n', /\[camera.openni2\] fps: must be a whole number/],
    ['[camera.orbbec]\nuri = x\n', /\[camera.orbbec\]: no such camera source in this build/],
  ];
  for (const [text, error] of camera) {
    const config = parseConfig(text, '/x');
    t.throws(() => checkCameraConfig(config), ConfigError);
    t.throws(() => checkCameraConfig(config), error, text.trim());
  }
});

t.test('a bad scenario is refused when the camera opens', async (t) => {
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'live:2, selfie:1' } } } });
  const options = await nativeCameraOptions(config, { photos: await demoPhotos() });
  await t.rejects(cameraAddon.openCamera(options), /unknown kind/);
  config.camera.sources.synthetic.scenario = 'live:-1';
  await t.rejects(cameraAddon.openCamera(await nativeCameraOptions(config, { photos: await demoPhotos() })), /positive number/);
  config.camera.sources.synthetic.scenario = 'live';
  await t.rejects(cameraAddon.openCamera(await nativeCameraOptions(config, { photos: [{ data: new Uint8Array(3 * 64 * 64), width: 64, height: 64 }] })),
    /no usable face/, 'photos without a usable face');
  t.rejects(nativeCameraOptions(deviceConfig()), /source = none/);
});
