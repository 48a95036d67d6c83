// Depth + colour liveness on the synthetic camera: every attack kind is refused and live faces pass, over
// many seeds (seeds 4242xxx: not the tuning seeds, not the benchmark's). Lossless: every frame analysed.
import t from 'tap';

import { deviceConfig, presentations, runScenario } from '../helpers/device';

const ATTACKS = ['print', 'print-tilted', 'print-bent', 'screen-phone', 'screen-tablet', 'cutout-eyes', 'photo-small', 'photo-large'];
const PER_KIND = Number(process.env.DEVICE_TEST_PRESENTATIONS ?? 10);

t.test('attacks are refused and live faces pass (synthetic, many seeds)', async (t) => {
  // Each presentation 0.6 s (18 frames), separated by an empty scene so each is a new face track.
  const items: string[] = [];
  for (let i = 0; i < PER_KIND; i++) for (const kind of ['live', ...ATTACKS]) items.push(`${kind}:0.6`, 'none:0.1');
  const { frames, status } = await runScenario(items.join(','), 4242001);
  t.equal(status.reportsDropped, 0, 'every report arrived');
  t.equal(status.framesDropped, 0, 'lossless: no frame dropped');
  const outcome = presentations(frames).filter((p) => p.kind !== 'none');
  for (const kind of ['live', ...ATTACKS]) {
    const ps = outcome.filter((p) => p.kind === kind);
    t.equal(ps.length, PER_KIND, `${PER_KIND} ${kind} presentations`);
    const accepted = ps.filter((p) => p.liveFrames > 0);
    if (kind === 'live') {
      t.equal(accepted.length, ps.length, 'every live presentation passes');
      const slow = ps.filter((p) => p.firstLiveMs === null || p.firstLiveMs > 300);
      t.same(slow.map((p) => p.presentation), [], 'each passes within 300 ms of appearing');
    } else {
      t.same(accepted.map((p) => p.presentation), [], `no ${kind} presentation passes`);
      t.ok(ps.every((p) => p.faceFrames > 0 || kind === 'screen-phone' || kind === 'photo-small'), `${kind}: the face is seen (so depth refused it)`);
    }
  }
});

t.test('a cut-out photo is refused although real eyes blink through its holes', async (t) => {
  const config = deviceConfig({ liveness: { require_blink: true } });
  const { frames } = await runScenario('cutout-eyes:6', 4242101, config);
  const seen = frames.filter((f) => f.face);
  t.ok(seen.length > 100, 'the printed face is detected');
  t.notOk(frames.some((f) => f.decision.live), 'never live');
  t.ok(seen.every((f) => /nose-relief|eye-recess|depth-step/.test(f.decision.failed)), 'refused by depth evidence');
});

t.test('require_blink: a live face passes only after a blink', async (t) => {
  const config = deviceConfig({ liveness: { require_blink: true } });
  const { frames } = await runScenario('live:6', 4242102, config);
  const live = frames.filter((f) => f.decision.live);
  t.ok(live.length > 0, 'passes within 6 s (the synthetic person blinks every 1.5-5 s)');
  const first = frames.findIndex((f) => f.decision.live);
  t.ok(frames.slice(0, first).some((f) => (f.eyeLeft + f.eyeRight) / 2 < 0.3), 'a closed-eye frame precedes the first pass');
  t.ok(frames.slice(0, first).every((f) => !f.decision.blinkSeen), 'no pass before the blink was seen');
});

t.test('colour model veto: colour_min above every score refuses live faces', async (t) => {
  const config = deviceConfig({ liveness: { colour_min: 1 } });
  const { frames } = await runScenario('live:1', 4242103, config);
  t.notOk(frames.some((f) => f.decision.live), 'never live');
  t.ok(frames.filter((f) => f.face).every((f) => f.decision.failed.includes('colour')), 'refused by the colour check');
});
