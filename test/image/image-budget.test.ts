// Decoded pixels in flight are bounded ([image] max_pixels_in_flight): while large images are being
// analysed, a further one is refused at once with 503 and Retry-After instead of adding its pixels to memory;
// every path gives the pixels back (success, engine failure, bad image), so the budget never leaks.
import t from 'tap';
import type { AnalyzeOptions, FaceAnalysis, RgbImage } from '../../src/engine/types';
import { PixelBudget } from '../../src/image/pixel-budget';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';
import { startTestApp } from '../helpers/app';

/** A fake engine whose analyses wait until the test opens the gate. */
class GatedEngine extends FakeEngine {
  private waiting: Array<() => void> = [];
  started = 0;

  override async analyze(image: RgbImage, options: AnalyzeOptions = {}): Promise<FaceAnalysis[]> {
    this.started++;
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return super.analyze(image, options);
  }

  open(): void {
    for (const go of this.waiting.splice(0)) go();
  }
}

const until = async (ok: () => boolean) => { while (!ok()) await new Promise((r) => setTimeout(r, 5)); };

t.test('a request over the pixel budget gets 503 + Retry-After at once; pixels come back on every path', async (t) => {
  const engine = new GatedEngine();
  // Photos of 1000 x 1000 (1 MP); the budget holds two of them.
  const a = await startTestApp({ engine, tune: (c) => { c.image.max_pixels = 1_000_000; c.image.max_pixels_in_flight = 2_000_000; } });
  t.teardown(() => a.close());
  const big = (identity: number) => fakePhotoB64({ identity, width: 1000, height: 1000 });
  const first = a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await big(1) } });
  const second = a.call({ method: 'POST', url: '/person/face/p2', payload: { faceImage: await big(2) } });
  await until(() => engine.started === 2);
  const refused = await a.call({ method: 'POST', url: '/person/compare-face', payload: { targetImage: await big(3), sourceImage: await big(4) } });
  t.same([refused.statusCode, refused.json().code, refused.headers['retry-after']], [503, 'SERVICE_UNAVAILABLE', '1'],
    'the third image does not fit while two are analysed');
  t.ok(refused.headers['request-id'], 'with a Request-Id');
  t.equal(engine.started, 2, 'the refused request never reached the engine');
  engine.open();
  t.equal((await first).statusCode, 410, 'the first request completes (nobody enrolled)');
  t.equal((await second).statusCode, 200, 'the second request completes');

  // Small images pass beside each other; an engine failure and a corrupt image give their pixels back too.
  engine.failWith = new Error('engine broke');
  const failing = a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await big(5) } });
  await until(() => engine.started === 3);
  engine.open();
  t.equal((await failing).statusCode, 500);
  engine.failWith = undefined;
  const corrupt = (await big(6)).slice(0, 2000);
  t.equal((await a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: corrupt.slice(0, corrupt.length - (corrupt.length % 4)) } })).statusCode, 400);
  const both = a.call({ method: 'POST', url: '/person/compare-face', payload: { targetImage: await big(7), sourceImage: await big(8) } });
  await until(() => engine.started === 5);
  engine.open();
  t.equal((await both).statusCode, 200, 'after every path the whole budget is free again: two images fit');
});

t.test('PixelBudget: admits within the limit, one image always when idle, releases once', async (t) => {
  const budget = new PixelBudget(100);
  const a = budget.tryAdmit(60)!;
  t.ok(a);
  t.equal(budget.tryAdmit(50), undefined, '60 + 50 > 100');
  const b = budget.tryAdmit(40)!;
  t.equal(budget.inFlight, 100);
  a.release();
  a.release();
  t.equal(budget.inFlight, 40, 'a second release does nothing');
  b.release();
  const huge = budget.tryAdmit(500);
  t.ok(huge, 'an image larger than the limit is admitted when nothing else is in flight');
  t.equal(budget.tryAdmit(1), undefined);
  huge!.release();
  t.equal(budget.inFlight, 0);
});
