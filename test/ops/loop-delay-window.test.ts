// The load-shedding delay window on a driven clock: a stall is recorded however its end falls against the
// window's rotation, is remembered for one to two windows, and a stall under way counts before it ends.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import t from 'tap';
import { LoopDelayWindow } from '../../src/ops/loop-delay-window';

function driven() {
  let now = 1_000;
  const window = new LoopDelayWindow({ resolutionMs: 10, windowMs: 500, now: () => now });
  const run = (ms: number) => {
    for (let end = now + ms; now + 10 <= end;) { now += 10; window.tick(); }
  };
  const stall = (ms: number) => { now += ms; };
  return { window, run, stall, tick: () => { now += 10; window.tick(); } };
}

t.test('a punctual loop reads no delay', async (t) => {
  const d = driven();
  d.run(2_000);
  t.equal(d.window.longestMs(), 0);
});

t.test('a stall counts while under way, when it ends, and for one to two windows after', async (t) => {
  const d = driven();
  d.run(300);
  d.stall(600);
  t.equal(d.window.longestMs(), 590, 'under way: the time since the last probe, less its interval');
  d.tick();
  t.equal(d.window.longestMs(), 600, 'ended: the first probe after it records it');
  d.run(490);
  t.equal(d.window.longestMs(), 600, 'still within its window');
  d.run(500);
  t.equal(d.window.longestMs(), 600, 'remembered for the previous window');
  d.run(20);
  t.equal(d.window.longestMs(), 0, 'forgotten after two rotations');
});

t.test('a stall ending at every phase of the rotation is recorded (the sampling race of a reset histogram)', async (t) => {
  for (let offset = 0; offset < 500; offset += 10) {
    const d = driven();
    d.run(500 + offset);
    d.stall(600);
    d.tick();
    t.equal(d.window.longestMs(), 600, `a stall ${offset} ms into a window`);
  }
  t.end();
});

t.test('a stall longer than two windows is still the delay afterwards', async (t) => {
  const d = driven();
  d.run(700);
  d.stall(3_000);
  d.tick();
  t.equal(d.window.longestMs(), 3_000);
  d.run(1_100);
  t.equal(d.window.longestMs(), 0);
});

t.test('forget() drops a start-up stall', async (t) => {
  const d = driven();
  d.stall(2_000);
  d.tick();
  t.equal(d.window.longestMs(), 2_000);
  d.window.forget();
  t.equal(d.window.longestMs(), 0);
});

t.test('on the real loop: a 300 ms stall right after a reset is seen (perf_hooks loses it)', async (t) => {
  const window = new LoopDelayWindow({ resolutionMs: 10, windowMs: 500 }).start();
  t.teardown(() => window.stop());
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  t.teardown(() => histogram.disable());
  await new Promise((res) => setTimeout(res, 50));
  histogram.reset();
  const until = Date.now() + 300;
  while (Date.now() < until) { /* stall */ }
  await new Promise((res) => setTimeout(res, 40));
  t.ok(window.longestMs() >= 250, `the window saw ${window.longestMs().toFixed(0)} ms`);
  t.comment(`perf_hooks after its reset saw ${(histogram.max / 1e6).toFixed(0)} ms`);
});
