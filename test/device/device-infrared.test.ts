// The active-infrared liveness check: a camera that gives the projector-lit infrared image (a RealSense,
// or the synthetic source rendering one) has the projector's dot pattern measured on the face. Skin and
// paper scatter the dots back; a screen's glass reflects them away, so a phone or tablet replay shows none
// whatever it displays. The image survives a face-check recording and its replay.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { tempDir } from '../helpers/app';
import { deviceConfig, demoPhotos, presentations, runToEnd } from '../helpers/device';

const SCREENS = ['screen-tablet'];
const SCENARIO = ['live:1', 'none:0.3', 'screen-tablet:1', 'none:0.3', 'print:1', 'none:0.3', 'live:1'].join(',');

function syntheticConfig(infrared: boolean, liveness: Record<string, number> = {}) {
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: SCENARIO, loop: false, realtime: false, seed: 4237101, infrared } } } });
  Object.assign(config.liveness, liveness);
  return config;
}

t.test('the dot pattern shows on live faces and prints, not on screens; the check refuses screens', async (t) => {
  const { frames } = await runToEnd(syntheticConfig(true), { photos: await demoPhotos() });
  const measured = frames.filter((f) => f.depth.measured && f.depth.infraredPattern >= 0);
  const pattern = (kind: string) => measured.filter((f) => f.truth.kind === kind).map((f) => f.depth.infraredPattern);
  const live = pattern('live'), screen = pattern('screen-tablet'), print = pattern('print');
  t.ok(live.length > 20 && screen.length > 10 && print.length > 10, `faces measured (${live.length} live, ${screen.length} screen, ${print.length} print)`);
  t.ok(Math.min(...live) > 0.04, `live faces show the pattern (min ${Math.min(...live).toFixed(3)})`);
  t.ok(Math.max(...screen) < 0.04, `screens show none (max ${Math.max(...screen).toFixed(3)})`);
  t.ok(Math.min(...print) > 0.04, `paper scatters it too (min ${Math.min(...print).toFixed(3)}): prints are refused by depth, not by this`);
  t.ok(measured.filter((f) => f.truth.kind === 'live').every((f) => !f.depth.failed.split(',').includes('infrared')), 'no live frame fails it');
  t.ok(measured.filter((f) => SCREENS.includes(f.truth.kind)).every((f) => f.depth.failed.split(',').includes('infrared')), 'every screen frame fails it');
  const outcome = presentations(frames);
  t.ok(outcome.filter((p) => p.kind === 'live').every((p) => p.liveFrames > 0), 'live presentations pass');
  t.ok(outcome.filter((p) => p.kind !== 'live' && p.kind !== 'none').every((p) => p.liveFrames === 0), 'attacks are refused');

  const off = await runToEnd(syntheticConfig(true, { min_infrared_pattern: 0 }), { photos: await demoPhotos() });
  t.ok(off.frames.every((f) => !f.depth.failed.split(',').includes('infrared')), 'min_infrared_pattern = 0 turns the check off');
});

t.test('a camera without an infrared image is not judged by it', async (t) => {
  const { frames } = await runToEnd(syntheticConfig(false), { photos: await demoPhotos() });
  t.ok(frames.filter((f) => f.depth.measured).every((f) => f.depth.infraredPattern === -1), 'no infrared: no measure (-1)');
  t.ok(frames.every((f) => !f.depth.failed.split(',').includes('infrared')), 'and no failure');
  t.ok(presentations(frames).filter((p) => p.kind === 'live').every((p) => p.liveFrames > 0), 'live faces pass');
});

t.test('a face-check recording keeps the infrared image; its replay measures the same', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rec = path.join(dir, 'rec');
  const { frames: original } = await runToEnd(syntheticConfig(true), { photos: await demoPhotos(), overrides: { record: { dir: rec } } });
  const index = fs.readFileSync(path.join(rec, 'recording.txt'), 'utf8').split('\n').filter((l) => l.startsWith('frame '));
  t.ok(index.length > 0 && index.every((l) => /^frame \d+ \S+\.ppm \S+\.pgm \S+-ir\.pgm$/.test(l)), 'each frame line names its infrared file');
  const replay = deviceConfig({ camera: { source: 'replay', sources: { replay: { path: rec, loop: false, realtime: false } } } });
  const { frames } = await runToEnd(replay);
  const t0 = original[0].timestampUs;
  const byTime = new Map(original.map((f) => [f.timestampUs - t0, f]));
  const pairs = frames.filter((f) => f.depth.measured).map((f) => [f, byTime.get(f.timestampUs - frames[0].timestampUs)] as const).filter(([, o]) => o?.depth.measured);
  t.ok(pairs.length > 20, `frames measured on both (${pairs.length})`);
  t.ok(pairs.every(([f, o]) => Math.abs(f.depth.infraredPattern - o!.depth.infraredPattern) < 1e-6), 'the same pattern measure on replay');
});
