// Spec 4.6 identify, 4.7 verify, 4.8 compare (cloud and device answers), over app.inject with
// the fake engine, whose photos carry an exact cosine to their identity's template.
import t from 'tap';
import { dot } from '../../src/matching/dot';
import { SimilarityScale, roundSimilarity } from '../../src/matching/similarity-scale';
import { fakePhotoB64, percentAtStep, stepReaching, templateFor, type FakePhoto } from '../helpers/fake-engine';
import { startTestApp, type TestApp } from '../helpers/app';

// Cosine steps k (cosine k/255) and their percents come from the similarity scale, so every boundary test
// stays "just at the threshold passes, one step below fails" through a recalibration.
const scale = new SimilarityScale();

type Teardown = { teardown(fn: () => unknown): void };
async function setup(t: Teardown, mode: 'cloud' | 'device' = 'cloud', duplicateThreshold?: number): Promise<TestApp> {
  const a = await startTestApp({
    tune: (c) => {
      c.server.mode = mode;
      if (duplicateThreshold !== undefined) c.matching.duplicate_threshold = duplicateThreshold;
    },
  });
  t.teardown(() => a.close());
  return a;
}
const post = async (a: TestApp, url: string, payload: Record<string, unknown>) => a.call({ method: 'POST', url, payload });
const enrol = async (a: TestApp, id: string, p: FakePhoto) => {
  const res = await post(a, `/person/face/${id}`, { faceImage: await fakePhotoB64(p) });
  if (res.statusCode !== 200) throw new Error(`enrol ${id}: ${res.body}`);
  return res.json();
};
/** A photo of `identity` whose template has cosine k/255 to the enrolled one. */
const probe = (identity: number, k: number, variant = 9) => fakePhotoB64({ identity, variant, cosine: k / 255 });

t.test('4.6 identify: 200 with personId, created, updated of the best match', async (t) => {
  const a = await setup(t);
  const alice = await enrol(a, 'alice', { identity: 1 });
  await enrol(a, 'bob', { identity: 2 });
  await enrol(a, 'carol', { identity: 3 });
  const res = await post(a, '/person/recognize-face', { faceImage: await probe(1, 240) });
  t.equal(res.statusCode, 200);
  t.same(res.json(), alice);
});

t.test('4.6 identify: the best of several candidates above the threshold wins', async (t) => {
  const a = await setup(t, 'cloud', 100); // two near-identical enrolments need the duplicate check out of the way
  await enrol(a, 'close', { identity: 1, variant: 1, cosine: 0.99 });
  await enrol(a, 'exact', { identity: 1 });
  const res = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1 }) });
  t.equal(res.json().personId, 'exact');
});

t.test('4.6 identify: a match needs 98% (identify_threshold)', async (t) => {
  const a = await setup(t);
  const threshold = a.config.matching.identify_threshold;
  t.equal(threshold, 98);
  await enrol(a, 'alice', { identity: 1 });
  const k = stepReaching(threshold, scale);
  t.equal((await post(a, '/person/recognize-face', { faceImage: await probe(1, k) })).statusCode, 200,
    `${k}/255 -> ${percentAtStep(k, scale)}% matches`);
  const res = await post(a, '/person/recognize-face', { faceImage: await probe(1, k - 1) });
  t.equal(res.statusCode, 410, `${k - 1}/255 -> ${percentAtStep(k - 1, scale)}% does not`);
  t.same(res.json(), { code: 'RF_001', message: 'No person matched' });
});

t.test('4.6 identify: 410 RF_001 when nobody matches, when the gallery is empty, when there is no face', async (t) => {
  const a = await setup(t);
  const empty = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1 }) });
  t.same([empty.statusCode, empty.json().code], [410, 'RF_001'], 'empty gallery');
  await enrol(a, 'alice', { identity: 1 });
  const other = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 2 }) });
  t.same([other.statusCode, other.json().code], [410, 'RF_001'], 'stranger');
  const noFace = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1, faces: 0 }) });
  t.same([noFace.statusCode, noFace.json().code], [410, 'RF_001'], 'no face');
});

t.test('4.6 identify: 400 F_011 when the face is smaller than min_face_size; group photo uses the largest face', async (t) => {
  const a = await setup(t);
  await enrol(a, 'alice', { identity: 1 });
  const small = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1, faceSize: 79 }) });
  t.equal(small.statusCode, 400);
  t.same(small.json(), { code: 'F_011', message: 'Wrong face size when image check' });
  const group = await post(a, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 1, faces: 4 }) });
  t.equal(group.json().personId, 'alice');
});

t.test('4.7 verify: 200 personId, created, updated when similarity reaches 80%', async (t) => {
  const a = await setup(t);
  const threshold = a.config.matching.verify_threshold;
  t.equal(threshold, 80);
  const alice = await enrol(a, 'alice', { identity: 1 });
  const k = stepReaching(threshold, scale);
  const ok = await post(a, '/person/verify-face/alice', { faceImage: await probe(1, k) });
  t.equal(ok.statusCode, 200, `${k}/255 -> ${percentAtStep(k, scale)}% matches`);
  t.same(ok.json(), alice);
  const fail = await post(a, '/person/verify-face/alice', { faceImage: await probe(1, k - 1) });
  t.equal(fail.statusCode, 410, `${k - 1}/255 -> ${percentAtStep(k - 1, scale)}%: a failed match is 410 RF_001`);
  t.same(fail.json(), { code: 'RF_001', message: 'No person matched' });
});

t.test('4.7 verify: another person, no face -> 410 RF_001; absent person_id -> 404 NF_001', async (t) => {
  const a = await setup(t);
  await enrol(a, 'alice', { identity: 1 });
  await enrol(a, 'bob', { identity: 2 });
  t.equal((await post(a, '/person/verify-face/bob', { faceImage: await fakePhotoB64({ identity: 1 }) })).statusCode, 410);
  t.equal((await post(a, '/person/verify-face/alice', { faceImage: await fakePhotoB64({ identity: 1, faces: 0 }) })).statusCode, 410);
  const absent = await post(a, '/person/verify-face/ghost', { faceImage: await fakePhotoB64({ identity: 1 }) });
  t.equal(absent.statusCode, 404);
  t.same(absent.json(), { code: 'NF_001', message: 'Face not found in collection' });
});

t.test('4.8 compare (cloud): facesMatched 1 at or above 80% by default, else 0', async (t) => {
  const a = await setup(t, 'cloud');
  const threshold = a.config.matching.compare_threshold;
  t.equal(threshold, 80);
  const source = await fakePhotoB64({ identity: 1 });
  const cmp = async (target: string, extra: Record<string, unknown> = {}) =>
    post(a, '/person/compare-face', { targetImage: target, sourceImage: source, ...extra });
  const k = stepReaching(threshold, scale);
  const same = await cmp(await probe(1, k));
  t.equal(same.statusCode, 200);
  t.same(same.json(), { facesMatched: 1 }, `${k}/255 -> ${percentAtStep(k, scale)}%`);
  t.same((await cmp(await probe(1, k - 1))).json(), { facesMatched: 0 }, `${k - 1}/255 -> ${percentAtStep(k - 1, scale)}%`);
  t.same((await cmp(await fakePhotoB64({ identity: 2 }))).json(), { facesMatched: 0 });
});

t.test('4.8 compare (cloud): similarityThreshold is a percent; 98 example; limits', async (t) => {
  const a = await setup(t, 'cloud');
  const source = await fakePhotoB64({ identity: 1 });
  // A target between the default 80% and the 98% example: the step reaching the midway percent.
  const k = stepReaching((a.config.matching.compare_threshold + 98) / 2, scale);
  const pct = percentAtStep(k, scale);
  t.ok(pct >= a.config.matching.compare_threshold && pct < 98, `target ${k}/255 -> ${pct}%`);
  const target = await probe(1, k);
  const cmp = (extra: Record<string, unknown>) => post(a, '/person/compare-face', { targetImage: target, sourceImage: source, ...extra });
  t.same((await cmp({})).json(), { facesMatched: 1 }, 'default 80');
  t.same((await cmp({ similarityThreshold: 98 })).json(), { facesMatched: 0 }, '98%');
  t.same((await cmp({ similarityThreshold: Math.floor(pct) })).json(), { facesMatched: 1 }, `${Math.floor(pct)}%`);
  t.same((await cmp({ similarityThreshold: Math.floor(pct) + 1 })).json(), { facesMatched: 0 }, `${Math.floor(pct) + 1}%`);
  t.same((await cmp({ similarityThreshold: 0 })).json(), { facesMatched: 1 });
  t.same((await cmp({ similarityThreshold: 100 })).json(), { facesMatched: 0 });
  for (const bad of [-1, 100.5, '80', null, true]) {
    const res = await cmp({ similarityThreshold: bad });
    t.same([res.statusCode, res.json().code], [400, 'R_003'], `similarityThreshold ${JSON.stringify(bad)}`);
  }
});

t.test('4.8 compare: the source is compared with the LARGEST face of targetImage; no face -> 0', async (t) => {
  const a = await setup(t, 'cloud');
  const source = await fakePhotoB64({ identity: 1 });
  // The fake's largest face is the identity's, the other faces are strangers.
  const group = await fakePhotoB64({ identity: 1, faces: 3, secondFacePercent: 90 });
  t.same((await post(a, '/person/compare-face', { targetImage: group, sourceImage: source })).json(), { facesMatched: 1 });
  const strangerFirst = await fakePhotoB64({ identity: 2, faces: 3 });
  t.same((await post(a, '/person/compare-face', { targetImage: strangerFirst, sourceImage: source })).json(), { facesMatched: 0 });
  const none = await fakePhotoB64({ identity: 1, faces: 0 });
  t.same((await post(a, '/person/compare-face', { targetImage: none, sourceImage: source })).json(), { facesMatched: 0 });
  t.same((await post(a, '/person/compare-face', { targetImage: source, sourceImage: none })).json(), { facesMatched: 0 });
});

t.test('4.8 compare (device): similarity in percent, two decimals, threshold does not change it', async (t) => {
  const a = await setup(t, 'device');
  const source = await fakePhotoB64({ identity: 1 });
  const k = stepReaching((a.config.matching.compare_threshold + 98) / 2, scale);
  const target = await probe(1, k);
  const res = await post(a, '/person/compare-face', { targetImage: target, sourceImage: source });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.same(Object.keys(body), ['similarity']);
  // float32 templates: the cosine is k/255 to about 1e-7
  t.ok(Math.abs(body.similarity - percentAtStep(k, scale)) < 0.02, `similarity ${body.similarity} ~ ${percentAtStep(k, scale)} (${k}/255)`);
  t.equal(Math.round(body.similarity * 100) / 100, body.similarity, 'two decimals');
  const withThreshold = await post(a, '/person/compare-face', { targetImage: target, sourceImage: source, similarityThreshold: 98 });
  t.same(withThreshold.json(), body);
  t.same((await post(a, '/person/compare-face', { targetImage: source, sourceImage: source })).json(), { similarity: 100 });
  // A stranger: the scale's percent of the two identities' (near-orthogonal) template cosine, far below a match.
  const strangerCosine = dot(templateFor(2, 0, 1), templateFor(1, 0, 1));
  const strangerPct = roundSimilarity(scale.toSimilarity(strangerCosine));
  const stranger = (await post(a, '/person/compare-face', { targetImage: await fakePhotoB64({ identity: 2 }), sourceImage: source })).json().similarity;
  t.ok(Math.abs(strangerCosine) < 0.2, `stranger cosine ${strangerCosine}`);
  t.ok(Math.abs(stranger - strangerPct) < 0.02, `stranger ${stranger} ~ ${strangerPct}`);
  t.ok(stranger < a.config.matching.compare_threshold, 'below the compare threshold');
  t.same((await post(a, '/person/compare-face', { targetImage: await fakePhotoB64({ identity: 1, faces: 0 }), sourceImage: source })).json(), { similarity: 0 });
});
