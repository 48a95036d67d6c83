// ISO/IEC 30107-3 metrics from per-session decisions (no camera): APCER per attack kind, the worst case,
// BPCER, counts, decision-time percentiles, the wrongly decided sessions and the 95 % upper bounds.
import t from 'tap';

import { padMetrics, percentile, upper95, type SessionDecision } from '../../src/device/pad-metrics';

function decision(session: string, label: string, accepted: boolean, decisionMs: number | null = accepted ? 100 : null, faceFrames = 10): SessionDecision {
  return {
    session, label, subject: 's01', distanceCm: 70, frames: 12, faceFrames, liveFrames: accepted ? 5 : 0,
    accepted, decisionMs, durationMs: 366.7, reasons: accepted ? {} : { flat: 8, 'nose-relief': 3 },
  };
}

t.test('APCER per kind, worst case, BPCER, counts and the wrongly decided sessions', async (t) => {
  const m = padMetrics([
    decision('a', 'live', true, 100), decision('b', 'live', true, 133.3), decision('c', 'live', false), decision('d', 'live', true, 200),
    decision('e', 'print', false), decision('f', 'print', true, 300), decision('g', 'print', false), decision('h', 'print', false),
    decision('i', 'screen', false, null, 0), decision('j', 'screen', false),
    decision('k', 'mask', true, 400), decision('l', 'mask', true, 166.7),
  ]);
  t.equal(m.standard, 'ISO/IEC 30107-3');
  t.equal(m.presentations, 12);
  t.same(m.counts, { live: 4, mask: 2, print: 4, screen: 2 });
  t.same(Object.keys(m.apcer), ['mask', 'print', 'screen'], 'every label but live is an attack kind');
  t.equal(m.apcer.print.errors, 1);
  t.equal(m.apcer.print.rate, 0.25);
  t.equal(m.apcer.screen.rate, 0);
  t.equal(m.apcer.mask.rate, 1);
  t.same(m.worstCaseApcer, { label: 'mask', rate: 1, upper95: 1 }, 'the worst kind');
  t.equal(m.bpcer.presentations, 4);
  t.equal(m.bpcer.errors, 1);
  t.equal(m.bpcer.rate, 0.25);
  t.same(m.decisionMs, { n: 3, p50: 133.3, p90: 200, p95: 200, max: 200 }, 'decision times of the accepted bona fide presentations');
  t.same(m.wronglyDecided.map((w) => [w.session, w.error]), [
    ['c', 'bona fide rejected'], ['f', 'attack accepted'], ['k', 'attack accepted'], ['l', 'attack accepted'],
  ]);
  t.same(m.wronglyDecided[0].reasons, { flat: 8, 'nose-relief': 3 }, 'with why it was refused');
  const screen = m.kinds.find((k) => k.label === 'screen')!;
  t.equal(screen.noFace, 1, 'presentations where no face was seen are counted');
  t.equal(m.kinds[0].label, 'live', 'the bona fide kind first');
  t.ok(m.kinds[0].bonaFide);
});

t.test('no attack or no bona fide presentation: null rates, no worst case', async (t) => {
  const onlyLive = padMetrics([decision('a', 'live', true)]);
  t.same(onlyLive.apcer, {});
  t.equal(onlyLive.worstCaseApcer, null);
  t.equal(onlyLive.bpcer.rate, 0);
  const onlyAttacks = padMetrics([decision('a', 'print', false)]);
  t.same(onlyAttacks.bpcer, { presentations: 0, errors: 0, rate: null, upper95: null });
  t.same(onlyAttacks.decisionMs, { n: 0, p50: null, p90: null, p95: null, max: null });
  const other = padMetrics([decision('a', 'genuine', true), decision('b', 'live', true)], 'genuine');
  t.same(Object.keys(other.apcer), ['live'], 'another bona fide label makes live an attack kind');
});

t.test('95 % upper bounds (Clopper-Pearson) and percentiles', async (t) => {
  // 0 errors in n: 1 - 0.05^(1/n).
  t.ok(Math.abs(upper95(0, 500) - (1 - Math.pow(0.05, 1 / 500))) < 1e-9, '0 of 500');
  t.ok(Math.abs(upper95(0, 10) - (1 - Math.pow(0.05, 1 / 10))) < 1e-9, '0 of 10');
  // 1 error in 10: the p where P(X <= 1) = 0.05, 0.3942 in published tables.
  t.ok(Math.abs(upper95(1, 10) - 0.3942) < 1e-3, '1 of 10');
  t.equal(upper95(3, 3), 1);
  t.equal(upper95(0, 0), 1);
  t.equal(percentile([5, 1, 4, 2, 3], 50), 3);
  t.equal(percentile([5, 1, 4, 2, 3], 100), 5);
  t.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95), 10);
  t.equal(percentile([], 50), null);
});
