// Each operation runs only the engine stages of its row in services/operation-stages.ts, shown by what the
// real engine reports it ran (the metrics' per-stage run counter and time histogram, through the API), and
// still answers every code the spec lists for it: identify F_011; create and update F_001 (counted on the
// other faces' boxes alone), F_003 (the eye model), F_006 and F_007 (the quality measures).
import fs from 'node:fs';
import sharp, { type Sharp } from 'sharp';
import t, { type Test } from 'tap';

import { ALL_STAGES, OPERATION_STAGES, operationOptions, stageOptions } from '../../src/services/operation-stages';
import { startTestApp, type TestApp } from '../helpers/app';
import { realEngine } from '../helpers/engine';
import { b64, faceCrop, groupPhoto, photosSkip } from '../helpers/photos';
import { dataPath, sharedData } from '../helpers/shared-data';

const STAGES = ['detect', 'landmarks', 'quality', 'eyes', 'liveness', 'embed'] as const;
type Stage = typeof STAGES[number];
type Counts = Record<Stage, number>;

/** The per-stage samples of one metric family in a Prometheus exposition (0 for a stage not yet seen). */
function stageSamples(text: string, name: string): Counts {
  const out = Object.fromEntries(STAGES.map((s) => [s, 0])) as Counts;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{stage="(\\w+)"\\} (\\S+)$`).exec(line);
    if (m && (STAGES as readonly string[]).includes(m[1])) out[m[1] as Stage] = Number(m[2]);
  }
  return out;
}

interface Ran { runs: Counts; observed: Counts }

async function metrics(a: TestApp): Promise<Ran> {
  const res = await a.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode}`);
  return {
    runs: stageSamples(res.body, 'face_check_engine_stage_runs_total'),
    observed: stageSamples(res.body, 'face_check_engine_stage_seconds_count'),
  };
}

/** What the engine ran for one request: stage runs (per face) and analyses in which each stage took time. */
async function ranFor(a: TestApp, request: () => Promise<unknown>): Promise<Ran> {
  const before = await metrics(a);
  await request();
  const after = await metrics(a);
  const diff = (x: Counts, y: Counts) => Object.fromEntries(STAGES.map((s) => [s, y[s] - x[s]])) as Counts;
  return { runs: diff(before.runs, after.runs), observed: diff(before.observed, after.observed) };
}

const runs = (analyses: number, perFace: Partial<Counts>): Counts =>
  ({ detect: analyses, landmarks: 0, quality: 0, eyes: 0, liveness: 0, embed: 0, ...perFace });

const darker = (s: Sharp) => s.linear(0.3, 0);
const blurred = (s: Sharp) => s.blur(8);
const tiny = (s: Sharp) => s.resize(90);
const same = (s: Sharp) => s.flop().resize(400);

t.test('the stage table: matching runs only the template, enrolment its checks, nothing runs colour liveness', async (t) => {
  for (const op of ['identify', 'verify', 'compare'] as const) t.same(OPERATION_STAGES[op], ['embed'], op);
  for (const op of ['create', 'update'] as const) t.same([...OPERATION_STAGES[op]].sort(), ['embed', 'eyes', 'quality'], op);
  t.same(operationOptions('identify'), {
    maxFaces: 1, embed: true, quality: false, eyes: false, liveness: false, otherFaceLandmarks: false,
  });
  t.same(stageOptions(ALL_STAGES), { maxFaces: 1, embed: true, quality: true, eyes: true, liveness: true, otherFaceLandmarks: true });
});

t.test('the real engine runs exactly the stages asked for, and says so', async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) return t.plan(0, `${skip || photos}`);
  const { data, info } = await sharp(groupPhoto(3)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const image = { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
  const every = await engine.profile(image, stageOptions(ALL_STAGES));
  const n = every.faces.length;
  t.ok(n >= 3, `a group photo (${n} faces)`);
  t.same(every.timings.runs, { detect: 1, landmarks: n, quality: 1, eyes: 1, liveness: 1, embed: 1 });

  const identify = await engine.profile(image, operationOptions('identify'));
  t.same(identify.timings.runs, { detect: 1, landmarks: 1, quality: 0, eyes: 0, liveness: 0, embed: 1 });
  for (const stage of ['quality', 'eyes', 'liveness'] as const) t.equal(identify.timings[stage], 0, `no ${stage} time`);
  t.equal(identify.faces.length, n, 'every face is still found (and counted by its box)');
  t.same(identify.faces[0].embedding, every.faces[0].embedding, 'the same template');
  t.same(identify.faces[0].box, every.faces[0].box);
  t.ok(identify.faces.slice(1).every((f) => f.points5.every((p) => p.x === 0 && p.y === 0)), 'other faces: box only');

  const redetect = await engine.profile(image, operationOptions('re-detect'));
  t.same(redetect.timings.runs, { detect: 1, landmarks: n, quality: 1, eyes: 0, liveness: 0, embed: 0 });
  t.same(redetect.faces.map((f) => f.pose), every.faces.map((f) => f.pose), 're-detection reads every face\'s pose');
});

t.test('through the API, each operation runs its stages and answers its codes', async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) return t.plan(0, `${skip || photos}`);
  const a = await startTestApp({ engine });
  t.teardown(() => a.close());
  const post = (url: string, payload: Record<string, unknown>) => a.call({ method: 'POST', url, payload });
  const crop = async (tf?: (s: Sharp) => Sharp) => b64(await faceCrop('A', tf));
  const group = b64(groupPhoto(3));
  const matching = runs(1, { landmarks: 1, embed: 1 });
  const enrolment = runs(1, { landmarks: 1, quality: 1, eyes: 1, embed: 1 });
  // The time histogram observes a stage only in the analyses that ran it.
  const observedOf = (c: Counts) => Object.fromEntries(STAGES.map((s) => [s, Math.min(c[s], c.detect)])) as Counts;

  const expectRan = async (t: Test, what: string, request: () => Promise<{ statusCode: number; body: string }>,
    status: number, want: Counts, code?: string, exact = true) => {
    let res: { statusCode: number; body: string } | undefined;
    const ran = await ranFor(a, async () => { res = await request(); });
    t.equal(res!.statusCode, status, `${what}: ${res!.body}`);
    if (code) t.equal(JSON.parse(res!.body).code, code, `${what}: ${code}`);
    if (exact) {
      t.same(ran.runs, want, `${what}: stage runs`);
      t.same(ran.observed, observedOf(want), `${what}: stages timed`);
    } else {
      // A failed check may run the roll re-check's detector passes (detect, landmarks, quality) on top.
      for (const s of ['eyes', 'liveness', 'embed'] as const) t.equal(ran.runs[s], want[s], `${what}: ${s} runs`);
      t.ok(ran.runs.detect >= 1 && ran.runs.quality >= want.quality, `${what}: detection and quality ran`);
    }
  };
  /** The enrolment's own analysis, on a photo failing a check the roll re-check may follow. */
  const recheckable = false;

  t.test('create', async (t) => {
    await expectRan(t, 'enrol A', async () => post('/person/face/alice', { faceImage: await crop() }), 200, enrolment);
    await expectRan(t, 'group photo', async () => post('/person/face/group', { faceImage: group }), 400, enrolment, 'F_001', recheckable);
    await expectRan(t, 'dark', async () => post('/person/face/dark', { faceImage: await crop(darker) }), 400, enrolment, 'F_006', recheckable);
  });
  t.test('update', async (t) => {
    await expectRan(t, 'same face again', async () => a.call({ method: 'PUT', url: '/person/face/alice', payload: { faceImage: await crop(same) } }),
      200, enrolment);
    // A blurred face fails F_007; the roll re-check then runs its own detector passes (no eye model, no template).
    const res = await a.call({ method: 'PUT', url: '/person/face/alice', payload: { faceImage: await crop(blurred) } });
    t.equal(res.json().code, 'F_007', `blurred: ${res.body}`);
  });
  t.test('create and update: eyes closed', { skip: sharedData ? false : 'shared data absent' }, async (t) => {
    const closed = b64(fs.readFileSync(dataPath('quality', 'human', 'stock-emotions-b-1.jpg')));
    await expectRan(t, 'create, eyes closed', async () => post('/person/face/closed', { faceImage: closed }), 400, enrolment, 'F_003', recheckable);
    await expectRan(t, 'update, eyes closed', async () => a.call({ method: 'PUT', url: '/person/face/alice', payload: { faceImage: closed } }),
      400, enrolment, 'F_003', recheckable);
  });
  t.test('identify', async (t) => {
    await expectRan(t, 'identify A', async () => post('/person/recognize-face', { faceImage: await crop(same) }), 200, matching);
    await expectRan(t, 'identify in a group photo', async () => post('/person/recognize-face', { faceImage: group }), 200, matching);
    await expectRan(t, 'small face', async () => post('/person/recognize-face', { faceImage: await crop(tiny) }), 400, matching, 'F_011');
  });
  t.test('verify', async (t) => {
    await expectRan(t, 'verify A', async () => post('/person/verify-face/alice', { faceImage: await crop(same) }), 200, matching);
    await expectRan(t, 'verify a stranger', async () => post('/person/verify-face/alice', { faceImage: b64(await faceCrop('B')) }),
      410, matching, 'RF_001');
  });
  t.test('compare', async (t) => {
    await expectRan(t, 'compare A with the group', async () => post('/person/compare-face', { targetImage: group, sourceImage: await crop() }),
      200, runs(2, { landmarks: 2, embed: 2 }));
  });
});
