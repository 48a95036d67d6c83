// One monotonic cosine -> percent mapping, piecewise-linear through exported anchors.
import t from 'tap';
import { SIMILARITY_ANCHORS, SimilarityScale, roundSimilarity } from '../../src/matching/similarity-scale';

const scale = new SimilarityScale();

t.test('calibrated anchors: FMR 1e-k at 80 + 9(k-4) percent, from -1 -> 0 to 1 -> 100', async (t) => {
  t.same(SIMILARITY_ANCHORS.map((a) => a.similarity), [0, 53, 62, 71, 80, 89, 98, 100]);
  t.equal(SIMILARITY_ANCHORS[0].cosine, -1);
  t.equal(SIMILARITY_ANCHORS[SIMILARITY_ANCHORS.length - 1].cosine, 1);
  for (const a of SIMILARITY_ANCHORS) t.equal(roundSimilarity(scale.toSimilarity(a.cosine)), a.similarity);
  // The anchors the service's defaults rest on, as measured on LFW (bench:calibration).
  const at = (pct: number) => SIMILARITY_ANCHORS.find((a) => a.similarity === pct)!.cosine;
  t.ok(at(80) > 0.35 && at(80) < 0.5, `80 % at cosine ${at(80)}`);
  t.ok(at(98) > at(80) + 0.05 && at(98) < 0.9, `98 % at cosine ${at(98)}`);
});

t.test('clamps and interpolates', async (t) => {
  t.equal(scale.toSimilarity(-1), 0);
  t.equal(scale.toSimilarity(-2), 0);
  t.equal(scale.toSimilarity(Number.NaN), 0);
  t.equal(scale.toSimilarity(1.2), 100);
  const [lo, hi] = [SIMILARITY_ANCHORS[4], SIMILARITY_ANCHORS[5]];
  t.equal(roundSimilarity(scale.toSimilarity((lo.cosine + hi.cosine) / 2)), (lo.similarity + hi.similarity) / 2, 'midway between anchors');
  t.equal(roundSimilarity(scale.toSimilarity(0)), roundSimilarity(53 * (1 / (1 + SIMILARITY_ANCHORS[1].cosine))), 'linear from -1');
});

t.test('monotonic over [-1, 1]', async (t) => {
  let prev = -1;
  for (let c = -1; c <= 1.0001; c += 0.001) {
    const s = scale.toSimilarity(c);
    if (s < prev) t.fail(`decreases at ${c}`);
    prev = s;
  }
  t.pass('non-decreasing');
});

t.test('cosine floor is the inverse', async (t) => {
  t.equal(scale.toCosineFloor(0), -1);
  t.equal(scale.toCosineFloor(101), Number.POSITIVE_INFINITY);
  for (const p of [1, 40, 80, 85, 90, 98, 99, 100]) {
    const c = scale.toCosineFloor(p);
    t.ok(Math.abs(scale.toSimilarity(c) - p) < 1e-9, `similarity(floor(${p})) = ${p}`);
    t.ok(scale.toSimilarity(c - 1e-4) < p, `just below floor(${p}) is below`);
  }
});

t.test('bad anchors are refused', async (t) => {
  t.throws(() => new SimilarityScale([{ cosine: 0, similarity: 0 }]));
  t.throws(() => new SimilarityScale([{ cosine: 0, similarity: 0 }, { cosine: 0, similarity: 100 }]));
  t.throws(() => new SimilarityScale([{ cosine: 0, similarity: 0 }, { cosine: 0.5, similarity: 90 }, { cosine: 1, similarity: 80 }]));
  t.throws(() => new SimilarityScale([{ cosine: 0, similarity: 5 }, { cosine: 1, similarity: 100 }]));
});

t.test('rounding to two decimals', async (t) => {
  t.equal(roundSimilarity(79.996), 80);
  t.equal(roundSimilarity(79.994), 79.99);
});

t.test('percent and cosineFloor: what the services compare and search with', async (t) => {
  for (const c of [-1, 0.1, 0.35, 0.5, 0.9]) t.equal(scale.percent(c), roundSimilarity(scale.toSimilarity(c)));
  for (const p of [0, 40, 80, 98, 101]) {
    t.equal(scale.cosineFloor(p), scale.toCosineFloor(p) - 1e-6);
    // A cosine at the search floor never shows a percent above the threshold it was derived from.
    if (p > 0 && p <= 100) t.ok(scale.percent(scale.cosineFloor(p)) <= p, `percent(cosineFloor(${p})) <= ${p}`);
  }
});
