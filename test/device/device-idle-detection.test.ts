// Idle detection ([camera] idle_detect_fps): with nobody in front of a realtime camera the pipeline runs the
// face detector only a few times a second, goes back to every frame as soon as a face is found, and a
// face that appears still becomes the live face well within the 1-second recency. Lossless sources keep
// analysing every frame.
import t from 'tap';

import { parseConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import { DeviceCamera, nativeCameraOptions } from '../../src/device/camera';
import type { CameraEvent, CameraStatus, FrameEvent } from '../../src/device/native-camera';
import { startTestApp } from '../helpers/app';
import { demoPhotos, deviceConfig, runScenario } from '../helpers/device';

const FPS = 30;
// Idle-rate detections fall on 200 ms steps from about 1 s after the start: a face appearing at 2.1 s comes
// between two of them, so the wait for the next one is part of what is measured.
const NONE_S = 2.1;
const LIVE_S = 3;
// The pipeline is idle after 1 s without a face (native PipelineConfig::idleAfterMs).
const IDLE_AFTER_S = 1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The native pipeline's clock (steady clock, microseconds): uv_hrtime is CLOCK_MONOTONIC too. */
const steadyUs = () => Number(process.hrtime.bigint() / 1000n);

interface Run {
  frames: FrameEvent[];
  /** Steady-clock time of the scenario's first frame and of the live segment's first frame. */
  startUs: number;
  liveStartUs: number;
  /** Steady-clock time GET /person/face/ first answered 200 (null: never). */
  firstServedUs: number | null;
  /** camera.status() sampled every poll. */
  statuses: CameraStatus[];
}

/** "none:2.1,live:3" on the realtime synthetic camera, through the device app, polling GET /person/face/. */
async function runDevice(idleDetectFps: number): Promise<Run> {
  const config = deviceConfig({
    camera: { source: 'synthetic', idle_detect_fps: idleDetectFps, sources: { synthetic: { scenario: `none:${NONE_S},live:${LIVE_S}`, loop: false, realtime: true, fps: FPS, seed: 4246001 } } },
  });
  const events: CameraEvent[] = [];
  const camera = await DeviceCamera.open(config, { photos: await demoPhotos(), onEvent: (e) => events.push(e), queueSize: 1024 });
  const app = await startTestApp({ tune: (c: Config) => { c.server.mode = 'device'; c.camera = config.camera; c.liveness = config.liveness; }, deps: { camera } });
  const statuses: CameraStatus[] = [];
  let firstServedUs: number | null = null;
  try {
    const end = Date.now() + (NONE_S + LIVE_S) * 1000 + 15_000;
    while (!camera.status().ended && Date.now() < end) {
      statuses.push(camera.status());
      const res = await app.call({ method: 'GET', url: '/person/face/' });
      if (res.statusCode === 200 && firstServedUs === null) firstServedUs = steadyUs();
      await sleep(20);
    }
    await sleep(100);
    statuses.push(camera.status());
  } finally {
    await app.close();
    await camera.close();
  }
  const frames = events.filter((e): e is FrameEvent => e.type === 'frame');
  // Frame times are the scenario's schedule: start + index / fps. The first frames are analysed at the full
  // rate (not idle yet), so the first report gives the schedule's origin.
  const first = frames[0];
  const startUs = first.timestampUs - Math.round(first.sequence * 1e6 / FPS);
  return { frames, startUs, liveStartUs: startUs + NONE_S * 1e6, firstServedUs, statuses };
}

/** Analysed frames a second among the reports whose frame time lies in [fromUs, toUs). */
function analysedRate(frames: FrameEvent[], fromUs: number, toUs: number): number {
  return frames.filter((f) => f.timestampUs >= fromUs && f.timestampUs < toUs).length / ((toUs - fromUs) / 1e6);
}

t.test('[camera] idle_detect_fps is read from the ini and reaches the native pipeline', async (t) => {
  t.equal(parseConfig('', '/x').camera.idle_detect_fps, 5, 'default: 5 detections a second while idle');
  const c = parseConfig('[camera]\nsource = synthetic\nidle_detect_fps = 2.5\n', '/x');
  t.equal(c.camera.idle_detect_fps, 2.5);
  t.equal((await nativeCameraOptions(c, { photos: await demoPhotos() })).idleDetectFps, 2.5);
  t.throws(() => parseConfig('[camera]\nidle_detect_fps = -1\n', '/x'), /idle_detect_fps/, 'a negative rate is refused');
});

t.test('nobody in front: detection at the idle rate; a face: every frame, and live within the recency', async (t) => {
  const run = await runDevice(5);
  const { frames, startUs, liveStartUs } = run;
  const liveEndUs = liveStartUs + LIVE_S * 1e6;

  // The empty scene once idle (a 0.2 s margin past the idle threshold): about 5 analysed frames a second.
  const idleRate = analysedRate(frames, startUs + (IDLE_AFTER_S + 0.2) * 1e6, liveStartUs);
  t.ok(idleRate >= 2.5 && idleRate <= 7.5, `empty scene: ${idleRate.toFixed(1)} analysed frames/s (idle rate 5)`);
  t.ok(run.statuses.some((s) => s.idle), 'the status says idle during the empty scene');
  const last = run.statuses[run.statuses.length - 1];
  t.ok(last.framesIdleSkipped >= 20, `frames captured but not analysed while idle: ${last.framesIdleSkipped}`);

  // The face appears: found at the next idle-rate frame (at most 1/5 s plus a frame later) ...
  const firstFace = frames.find((f) => f.truth.kind === 'live' && f.face);
  t.ok(firstFace, 'the face is found');
  const foundAfterMs = (firstFace!.timestampUs - liveStartUs) / 1000;
  t.ok(foundAfterMs >= 0 && foundAfterMs <= 300, `first detection ${foundAfterMs.toFixed(0)} ms after the face appeared`);
  // ... then every frame again: the live segment after that detection is analysed at the full rate.
  const liveRate = analysedRate(frames, firstFace!.timestampUs, liveEndUs);
  t.ok(liveRate >= 20, `face in view: ${liveRate.toFixed(1)} analysed frames/s (camera ${FPS})`);
  t.ok(liveRate > 3 * idleRate, 'the full rate resumes as soon as a face is seen');
  const afterFace = frames.filter((f) => f.timestampUs > firstFace!.timestampUs && f.timestampUs < liveEndUs);
  const gaps = afterFace.slice(1).map((f, i) => (f.timestampUs - afterFace[i].timestampUs) / 1000);
  t.ok(Math.max(...gaps) < 250, `no idle-sized gap once the face is seen (largest ${Math.max(...gaps).toFixed(0)} ms)`);

  // The live face is served (GET /person/face/ through the device app) well within the 1 s recency.
  t.ok(run.firstServedUs !== null, 'GET /person/face/ served the live face');
  const servedAfterMs = (run.firstServedUs! - liveStartUs) / 1000;
  t.ok(servedAfterMs > 0 && servedAfterMs < 1000, `live face served ${servedAfterMs.toFixed(0)} ms after the face appeared`);
  const firstLive = frames.find((f) => f.decision.live);
  t.ok(firstLive && (firstLive.timestampUs - liveStartUs) / 1000 < 600, `decided live ${((firstLive!.timestampUs - liveStartUs) / 1000).toFixed(0)} ms after the face appeared`);
});

t.test('idle_detect_fps = 0: every frame of the empty scene is analysed', async (t) => {
  const run = await runDevice(0);
  const rate = analysedRate(run.frames, run.startUs + (IDLE_AFTER_S + 0.2) * 1e6, run.liveStartUs);
  t.ok(rate >= 20, `empty scene: ${rate.toFixed(1)} analysed frames/s (camera ${FPS})`);
  t.notOk(run.statuses.some((s) => s.idle), 'never idle');
  t.equal(run.statuses[run.statuses.length - 1].framesIdleSkipped, 0, 'no frame skipped');
});

t.test('a lossless source analyses every frame whatever the idle rate', async (t) => {
  const config = deviceConfig({ camera: { idle_detect_fps: 5 } });
  const { frames, status } = await runScenario('none:2,live:1', 4246002, config);
  t.equal(frames.length, 3 * FPS, 'every frame of the scenario has its report');
  t.equal(status.framesIdleSkipped, 0);
  t.notOk(status.idle);
});
