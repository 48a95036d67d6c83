// `face-check record` and the replay source: a synthetic recording written to disk and played back gives
// the same liveness outcome; a plain folder of colour images replays colour-only (no depth), where
// [liveness] allow_colour_only decides whether colour alone may pass.
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';

import { main } from '../../src/cli/main';
import { parseRecordArgs, recordCamera } from '../../src/device/record';
import { tempDir } from '../helpers/app';
import { demoPhotos, deviceConfig, runToEnd } from '../helpers/device';

t.test('record a synthetic scene, replay it: live frames pass, the print does not', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, 'rec');
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'live:1,print:1', loop: false, realtime: false, seed: 4244001 } } } });
  const status = await recordCamera(config, { dir: out, frames: 60 }, { photos: await demoPhotos() });
  t.equal(status.framesRecorded, 60, '60 frames recorded');
  const index = fs.readFileSync(path.join(out, 'recording.txt'), 'utf8').trim().split('\n');
  t.equal(index[0], 'face-check-recording 1');
  t.equal(index[1], 'size 640 480');
  t.match(index[2], /^intrinsics 525\.0+ 525\.0+ 319\.50* 239\.50*$/);
  const frames = index.filter((l) => l.startsWith('frame '));
  t.equal(frames.length, 60);
  const [, ts, colour, depth] = frames[1].split(' ');
  t.equal(Number(ts), 33333, 'timestamps in microseconds at 30 fps');
  t.ok(fs.readFileSync(path.join(out, colour)).subarray(0, 15).toString().startsWith('P6 640 480 255'), 'colour: binary PPM');
  t.ok(fs.readFileSync(path.join(out, depth)).subarray(0, 17).toString().startsWith('P5 640 480 65535'), 'depth: 16-bit PGM');
  await t.rejects(recordCamera(config, { dir: out, frames: 10 }, { photos: await demoPhotos() }), /already holds a recording/, 'never overwrites a recording');

  const replay = deviceConfig({ camera: { source: 'replay', sources: { replay: { path: out, loop: false, realtime: false } } } });
  const { frames: reports, status: end } = await runToEnd(replay);
  t.equal(reports.length, 60, 'every frame replayed and analysed');
  t.ok(end.ended, 'the replay ended');
  const livePart = reports.filter((r) => r.sequence < 30);
  const printPart = reports.filter((r) => r.sequence >= 30);
  t.ok(livePart.filter((r) => r.decision.live).length >= 20, 'the recorded live face passes');
  t.notOk(printPart.some((r) => r.decision.live), 'the recorded print never passes');
  t.ok(printPart.filter((r) => r.face).every((r) => /flat|nose-relief/.test(r.decision.failed)), 'refused by depth');

  // The same recording as a folder of PNG images: colour only.
  const images = path.join(dir, 'images');
  fs.mkdirSync(images);
  for (let i = 0; i < 30; i++) {
    const ppm = fs.readFileSync(path.join(out, frames[i].split(' ')[2]));
    await sharp(ppm.subarray(ppm.indexOf(10) + 1), { raw: { width: 640, height: 480, channels: 3 } }).png().toFile(path.join(images, `f${String(i).padStart(3, '0')}.png`));
  }
  const colourOnly = deviceConfig({ camera: { source: 'replay', sources: { replay: { path: images, loop: false, realtime: false } } } });
  const { frames: c1 } = await runToEnd(colourOnly);
  t.equal(c1.length, 30);
  t.ok(c1.filter((r) => r.face).length >= 25, 'faces found without depth');
  t.notOk(c1.some((r) => r.decision.live), 'colour only: never live by default (allow_colour_only = false)');
  t.ok(c1.filter((r) => r.face).every((r) => r.decision.failed.includes('no-depth')), 'reason: no-depth');
  const allowed = deviceConfig({
    camera: { source: 'replay', sources: { replay: { path: images, loop: false, realtime: false } } },
    liveness: { allow_colour_only: true, colour_only_threshold: 0 },
  });
  const { frames: c2 } = await runToEnd(allowed);
  t.ok(c2.some((r) => r.decision.live), 'allow_colour_only with threshold 0: colour alone passes');
  const strict = deviceConfig({
    camera: { source: 'replay', sources: { replay: { path: images, loop: false, realtime: false } } },
    liveness: { allow_colour_only: true, colour_only_threshold: 1 },
  });
  const { frames: c3 } = await runToEnd(strict);
  t.notOk(c3.some((r) => r.decision.live), 'threshold 1: never');
  t.ok(c3.filter((r) => r.face).some((r) => r.decision.failed.includes('colour-only')), 'reason: colour-only');
});

t.test('face-check record (the CLI) writes a recording the replay source plays', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'device.ini');
  fs.writeFileSync(ini, '[server]\nmode = device\n[storage]\npath = db\n[camera]\nsource = synthetic\n[camera.synthetic]\nscenario = live\nrealtime = false\nseed = 4244002\n');
  const out: string[] = [];
  const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
  const code = await main(['record', '--config', ini, '--out', path.join(dir, 'rec'), '--frames', '12'], io);
  t.equal(code, 0, out.join('\n'));
  t.match(out.join('\n'), /recorded 12 frames of the synthetic camera/);
  t.equal(fs.readFileSync(path.join(dir, 'rec', 'recording.txt'), 'utf8').split('\n').filter((l) => l.startsWith('frame ')).length, 12);
  t.equal(await main(['record', '--config', ini], io), 2, 'usage error without --out');
});

t.test('record command arguments', async (t) => {
  t.same(parseRecordArgs(['--out', 'x', '--seconds', '2'], 30), { dir: 'x', frames: 60, format: 'face-check', config: undefined });
  t.same(parseRecordArgs(['--out', 'x', '--frames', '5', '--format', 'fakenect', '--config', 'a.ini'], 30), { dir: 'x', frames: 5, format: 'fakenect', config: 'a.ini' });
  t.throws(() => parseRecordArgs([], 30), /--out/);
  t.throws(() => parseRecordArgs(['--out', 'x', '--format', 'avi'], 30), /--format/);
});

t.test('a missing recording: the camera stays disconnected and says why', async (t) => {
  const config = deviceConfig({ camera: { source: 'replay', sources: { replay: { path: '/nonexistent/recording', realtime: false } } } });
  await t.rejects(runToEnd(config), /does not exist/);
});
