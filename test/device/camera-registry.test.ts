// The camera registry is the one list: the addon describes its sources (options, USB devices, recordings)
// and everything else reads that description - the ini check, the addon's own check, `face-check cameras`,
// the udev rule, `device install`'s ini - so the two checks agree on every option and a refused camera
// section stops `serve` before anything is created.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { main } from '../../src/cli/main';
import { parseConfig } from '../../src/config/load';
import { cameraCatalog, cameraSourceNames, sourceForRecording, type CameraOptionSpec } from '../../src/device/camera-catalog';
import { checkCameraConfig, parseCameraOption } from '../../src/device/camera-settings';
import { cameraAddon } from '../../src/device/native-camera';
import { resolveOrtLibrary } from '../../src/engine/ort-library';
import { installCameras } from '../../src/install/device-ini';
import { cameraUdevRule } from '../../src/install/udev-rule';
import { packageRoot } from '../../src/package-root';
import { tempDir } from '../helpers/app';

const root = packageRoot();

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

/** The camera sources this checkout's headers enable (what native/sources.json and the build agree on). */
function sourcesWithHeaders(): string[] {
  const defines = execFileSync(process.execPath, [path.join(root, 'native', 'camera-sources.js'), 'defines'], { cwd: root, encoding: 'utf8' });
  return defines.split(/\s+/).filter(Boolean).map((d) => d.replace(/^FACE_CHECK_HAVE_/, '').toLowerCase());
}

t.test('the registry lists the built-in sources and every SDK source whose headers this build found', async (t) => {
  const names = cameraSourceNames();
  t.same(names.slice(0, 2), ['synthetic', 'replay'], 'built in, first');
  const sdk = Object.keys((JSON.parse(fs.readFileSync(path.join(root, 'native', 'sources.json'), 'utf8')) as { camera_sources: object }).camera_sources);
  t.same(sdk.filter((n) => names.includes(n)), sourcesWithHeaders(), 'each SDK source compiled exactly when its header is found');
  if (process.env.FACE_CHECK_REQUIRE_OPENNI2 === '1') t.ok(names.includes('openni2'), 'CI builds the openni2 source');
  for (const s of cameraCatalog()) {
    t.ok(s.summary.length > 10, `${s.name}: a summary`);
    t.ok(s.options.length > 0, `${s.name}: options`);
    t.equal(new Set(s.options.map((o) => o.key)).size, s.options.length, `${s.name}: option keys unique`);
    for (const o of s.options) {
      t.match(o.key, /^[a-z][a-z0-9_]*$/, `${s.name}.${o.key}: an ini key`);
      t.doesNotThrow(() => parseCameraOption(o, o.default, '/'), `${s.name}.${o.key}: its default is valid`);
    }
    if (s.library) t.ok(s.options.some((o) => o.key === s.libraryOption), `${s.name}: the library option exists`);
    if (s.recordingExtensions.length) t.ok(s.options.some((o) => o.key === s.recordingOption), `${s.name}: the recording option exists`);
  }
  const openni2 = cameraCatalog().find((s) => s.name === 'openni2');
  if (openni2) {
    t.same(openni2.usb.map((u) => `${u.vendor}:${u.product}`), ['2bc5:', '1d27:'], 'openni2: every Orbbec and PrimeSense/Asus product');
    t.equal(sourceForRecording('/x/Session.ONI')?.name, 'openni2', '.oni files play through openni2');
  }
  const freenect = cameraCatalog().find((s) => s.name === 'freenect');
  if (freenect) t.ok(freenect.usb.length === 6 && freenect.usb.every((u) => u.vendor === '045e'), 'freenect: the Kinect\'s six devices');
  t.equal(sourceForRecording('/x/rec'), undefined, 'a folder plays through replay itself');
});

/** Values to try for an option: valid ones and invalid ones, by type. */
function trials(o: CameraOptionSpec): { value: string; valid: boolean }[] {
  switch (o.type) {
    case 'flag': return [{ value: 'true', valid: true }, { value: 'off', valid: true }, { value: 'maybe', valid: false }];
    case 'choice': return [...o.choices!.map((c) => ({ value: c, valid: true })), { value: `${o.choices![0]}x`, valid: false }];
    case 'integer':
    case 'number': return [
      { value: String(o.min), valid: true }, { value: String(o.max), valid: true },
      { value: String(o.min! - 1), valid: false }, { value: String(o.max! + 1), valid: false }, { value: 'ten', valid: false },
      { value: String(o.min! + 0.5), valid: o.type === 'number' && o.min! + 0.5 <= o.max! },
    ];
    case 'text': return [{ value: 'some-text', valid: true }];
  }
}

t.test('the service and the addon agree on every option of every SDK source and of replay', async (t) => {
  const modelDir = path.join(root, 'models');
  const ortLibrary = resolveOrtLibrary();
  // Opening (not starting) a source checks its options and makes it; nothing is read from a camera.
  const nativeAccepts = async (source: string, sourceOptions: Record<string, string>): Promise<string> => {
    try {
      const handle = await cameraAddon.openCamera({ source, modelDir, ortLibrary, process: false, sourceOptions });
      await handle.stop();
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  // What a source needs besides the option tried (replay has a required path).
  const base: Record<string, Record<string, string>> = { replay: { path: '/nonexistent/recording' } };
  let checked = 0;
  for (const s of cameraCatalog().filter((x) => x.name !== 'synthetic')) {
    for (const o of s.options.filter((x) => x.settable)) {
      for (const { value, valid } of trials(o)) {
        let tsError = '';
        try {
          parseCameraOption(o, value, '/');
        } catch (err) {
          tsError = (err as Error).message;
        }
        const nativeError = await nativeAccepts(s.name, { ...base[s.name], [o.key]: value });
        t.equal(tsError === '', valid, `${s.name}.${o.key} = ${value}: service ${valid ? 'accepts' : 'refuses'} (${tsError})`);
        t.equal(nativeError === '', valid, `${s.name}.${o.key} = ${value}: addon ${valid ? 'accepts' : 'refuses'} (${nativeError})`);
        if (!valid) t.equal(nativeError, `${s.name}.${o.key}: ${tsError}`, 'the same reason, named the same way');
        checked++;
      }
    }
  }
  t.ok(checked > 20, `${checked} values tried`);
  t.match(await nativeAccepts('replay', { nonsense: '1' }), /^replay\.nonsense: unknown option \(known: path, loop, realtime, fps\)$/);
  if (cameraSourceNames().includes('openni2')) {
    t.match(await nativeAccepts('openni2', { record_path: '/tmp/x.oni' }), /openni2\.record_path: unknown option/, 'what only the program sets is refused from the ini');
    const handle = await cameraAddon.openCamera({ source: 'openni2', modelDir, ortLibrary, process: false, programOptions: { record_path: '/tmp/x.oni' } });
    await handle.stop();
    t.pass('and accepted from the program');
  }
});

t.test('a .oni replay opens the openni2 source with its own section and the replay\'s loop', { skip: !cameraSourceNames().includes('openni2') }, async (t) => {
  const config = parseConfig(['[camera]', 'source = replay', '[camera.replay]', 'path = rec/session.oni', 'loop = false',
    '[camera.openni2]', 'library = lib/libOpenNI2.so.0', 'width = 320'].join('\n'), '/srv/kiosk');
  const settings = checkCameraConfig(config)!;
  t.equal(settings.source.name, 'openni2');
  t.equal(settings.configured.name, 'replay');
  t.match(settings.options, { uri: '/srv/kiosk/rec/session.oni', loop: false, library: 'lib/libOpenNI2.so.0', width: 320 });
});

t.test('the udev rule names every source\'s USB devices for the group, and refuses a malformed id', async (t) => {
  const rule = cameraUdevRule('face-check', cameraCatalog());
  for (const s of cameraCatalog()) {
    for (const u of s.usb) {
      t.ok(rule.includes(`ATTR{idVendor}=="${u.vendor}", ${u.product ? `ATTR{idProduct}=="${u.product}", ` : ''}MODE="0660", GROUP="face-check"`), `${s.name} ${u.vendor}:${u.product}`);
    }
  }
  const bad = { ...cameraCatalog()[0], usb: [{ vendor: '2BC5"', product: '', model: 'x' }] };
  t.throws(() => cameraUdevRule('face-check', [bad]), /bad USB id/);
  t.throws(() => cameraUdevRule('face check', cameraCatalog()), /not a group name/);
});

t.test('face-check cameras: every source, whether it can open here, its options and devices', async (t) => {
  const text = capture();
  t.equal(await main(['cameras'], text.io), 0, text.err.join('\n'));
  for (const name of cameraSourceNames()) t.ok(text.out.some((l) => l.startsWith(`${name}: `)), name);
  t.ok(text.out.includes('synthetic: rendered live faces and attacks from face photos (a trial without a camera, tests)'));
  t.ok(text.out.includes('  can open here: built in'));

  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'device.ini');
  const source = cameraSourceNames().includes('openni2') ? 'openni2' : 'replay';
  fs.writeFileSync(ini, `[server]\nmode = device\n[camera]\nsource = ${source}\n[camera.openni2]\nlibrary = ${path.join(dir, 'nowhere', 'libOpenNI2.so.0')}\n[camera.replay]\npath = rec\n`);
  if (source === 'openni2') {
    const json = capture();
    t.equal(await main(['cameras', '--config', ini, '--format', 'json'], json.io), 0, json.err.join('\n'));
    const listed = JSON.parse(json.out.join('\n')) as { configured: string; sources: { name: string; usable: boolean; detail: string; configured: boolean }[] };
    t.equal(listed.configured, 'openni2');
    const openni2 = listed.sources.find((s) => s.name === 'openni2')!;
    t.match(openni2, { usable: false, configured: true }, 'the library the ini names is the one probed');
    t.match(openni2.detail, /nowhere\/libOpenNI2\.so\.0/);
  }
  fs.appendFileSync(ini, '[camera.synthetic]\nscenery = live\n');
  const refused = capture();
  t.equal(await main(['cameras', '--config', ini], refused.io), 78, 'a bad section is a configuration error');
  t.match(refused.err.join('\n'), /\[camera.synthetic\] scenery: unknown key \(known in \[camera.synthetic\]: scenario, loop/);
});

t.test('serve refuses a bad camera section with exit 78 before it creates anything', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'device.ini');
  fs.writeFileSync(ini, '[server]\nmode = device\nport = 0\n[storage]\npath = store\n[licence]\ndevelopment = true\n[camera]\nsource = synthetic\n[camera.synthetic]\nfps = 500\n');
  const c = capture();
  t.equal(await main(['serve', '--config', ini], c.io), 78);
  t.match(c.err.join('\n'), /\[camera.synthetic\] fps: must be 1 to 120/);
  t.notOk(fs.existsSync(path.join(dir, 'store')), 'no store folder');
});

t.test('device install offers every source an installed device can run', async (t) => {
  t.same(installCameras(), [...cameraSourceNames().filter((n) => n !== 'replay'), 'none']);
});

t.test('the README\'s camera example is an ini the device accepts', async (t) => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const device = readme.slice(readme.indexOf('## Device mode'));
  const example = /```ini\n([\s\S]*?)```/.exec(device)?.[1];
  t.ok(example, 'an ini block in the device section');
  const config = parseConfig(`[server]\nmode = device\n${example}`, '/srv');
  if (cameraSourceNames().includes('openni2')) t.equal(checkCameraConfig(config)?.source.name, 'openni2');
  else t.throws(() => checkCameraConfig(config), /not a camera source of this build/);
});
