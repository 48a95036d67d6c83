// The RealSense bag writer (native/test/realsense_bag_writer), the tool the realsense source's tests record
// with: a face-check recording of the synthetic source written as a .bag through librealsense's own
// software_device and recorder plays back through librealsense (rs2::playback) with every frame, the
// recorded timestamps in the hardware clock domain, increasing frame numbers, the recorded colour and
// depth (exactly, or within a D4xx's noise with --stereo-profile), and the sensors, options, intrinsics
// and extrinsics of a D435. Alignment of --separate-depth-camera bags is the realsense source's to test.
//
// Needs librealsense2 built by npm run build:librealsense (cached) and g++; skipped (with the reason)
// without them unless FACE_CHECK_REQUIRE_REALSENSE is set (CI sets it: there a missing build fails the run).
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';

import { tempDir } from '../helpers/app';
import { demoPhotos, deviceConfig, runToEnd } from '../helpers/device';
import { realsenseMissing, verifyBag, writeBag, type BagOptions, type BagReport } from '../helpers/realsense';

const missing = realsenseMissing({ source: false });
if (missing && (missing.installed || process.env.FACE_CHECK_REQUIRE_REALSENSE)) {
  t.fail(`the RealSense bag writer tests cannot run: ${missing.reason}`);
}
const skip = missing ? { skip: missing.reason } : {};

let dir = '';
let recording = '';
let recorded: { timestampUs: number; depth: boolean }[] = [];
let intrinsics: number[] = [];
let size: number[] = [];

t.before(async () => {
  if (missing) return;
  dir = tempDir();
  recording = path.join(dir, 'scene');
  // A live face then a print: faces, background and the print's flat depth in one short scene.
  const config = deviceConfig({ camera: { source: 'synthetic', sources: { synthetic: { scenario: 'live:1,print:0.6', loop: false, realtime: false, seed: 4337001 } } } });
  await runToEnd(config, { photos: await demoPhotos(), overrides: { record: { dir: recording } } });
  const lines = fs.readFileSync(path.join(recording, 'recording.txt'), 'utf8').split('\n');
  recorded = lines.filter((l) => l.startsWith('frame ')).map((l) => {
    const [, us, , depth] = l.split(' ');
    return { timestampUs: Number(us), depth: depth !== '-' };
  });
  intrinsics = lines.find((l) => l.startsWith('intrinsics '))!.split(' ').slice(1).map(Number);
  size = lines.find((l) => l.startsWith('size '))!.split(' ').slice(1).map(Number);
});
t.teardown(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

let bags = 0;
function roundTrip(options: BagOptions = {}): BagReport {
  const bag = path.join(dir, `scene-${++bags}.bag`);
  const written = writeBag(recording, bag, options);
  const depthFrames = options.noDepth ? 0 : recorded.filter((f) => f.depth).length;
  if (written.colour_frames !== recorded.length || written.depth_frames !== depthFrames) {
    throw new Error(`the writer pushed ${written.colour_frames} colour and ${written.depth_frames} depth frames of ${recorded.length} and ${depthFrames}`);
  }
  const report = verifyBag(recording, bag, options);
  fs.rmSync(bag);
  return report;
}

/** Every recorded frame came back on `stream`, with its timestamp, clock domain and pixels. */
function everyFrameBack(t: Test, report: BagReport, stream: 'depth' | 'colour', expected: number) {
  const s = report[stream];
  t.equal(s.frames, expected, `${stream}: every frame played back (missing: ${s.missing.join(', ') || 'none'})`);
  t.equal(s.distinct_timestamps, expected, `${stream}: each once`);
  t.equal(s.recorded_timestamps, expected, `${stream}: timestamps as recorded (microseconds of the source's clock)`);
  t.equal(s.hardware_clock, expected, `${stream}: in the hardware clock domain`);
  t.ok(s.frame_numbers_increase, `${stream}: frame numbers increase`);
  t.equal(s.exact, expected, `${stream}: pixels as written`);
}

t.test('a recording comes back from its bag frame for frame, as a D435 would stream it', skip, async (t) => {
  t.ok(recorded.length >= 40, `the scene has frames (${recorded.length})`);
  const report = roundTrip();
  t.ok(report.first_frame && report.ended, 'played to the end');
  everyFrameBack(t, report, 'colour', recorded.length);
  everyFrameBack(t, report, 'depth', recorded.filter((f) => f.depth).length);
  const d = report.depth_vs_recording;
  t.ok(d.compared > 0, 'measured depth compared');
  t.equal(d.within_tolerance, d.compared, 'depth in millimetres exactly as recorded');
  t.equal(d.holes, 0, 'no measurement lost');

  t.same(report.sensors, ['Stereo Module', 'RGB Camera'], "a D435's sensors");
  t.equal(report.depth_units, 0.001, 'depth units of 1 mm');
  t.ok(report.depth_sensor, 'the stereo module plays back as a depth sensor (its depth scale readable)');
  t.equal(report.baseline_mm, 50, "the D435's stereo baseline");
  const colour = report.streams.find((s) => s.stream === 'Color')!;
  const depth = report.streams.find((s) => s.stream === 'Depth')!;
  t.match(colour, { format: 'RGB8', fps: 30, intrinsics: { width: size[0], height: size[1] } }, 'colour: RGB8 at the recorded size and rate');
  t.match(depth, { format: 'Z16', fps: 30, intrinsics: { width: size[0], height: size[1] } }, 'depth: Z16 at the recorded size and rate');
  const c = colour.intrinsics;
  t.same([c.fx, c.fy, c.cx, c.cy].map((v) => Math.round(v * 1000) / 1000), intrinsics.map((v) => Math.round(v * 1000) / 1000), "the recording's colour intrinsics");
  t.same(depth.intrinsics, colour.intrinsics, 'registered depth: the colour grid');
  t.same(report.depth_to_colour_m, [0, 0, 0], 'registered depth: no offset to colour');
});

t.test('depth in 100 um units', skip, async (t) => {
  const report = roundTrip({ depthUnits: 0.0001 });
  t.equal(report.depth_units, 0.0001);
  everyFrameBack(t, report, 'depth', recorded.filter((f) => f.depth).length);
  t.equal(report.depth_vs_recording.within_tolerance, report.depth_vs_recording.compared, 'depth as recorded, in tenths of millimetres');
});

t.test('the stereo profile degrades depth within a D4xx noise, reproducibly', skip, async (t) => {
  const report = roundTrip({ stereoProfile: true, seed: 7 });
  // `exact` compares each played frame with the profile computed again by the verifying process: the
  // same seed gives the same depth.
  everyFrameBack(t, report, 'depth', recorded.filter((f) => f.depth).length);
  everyFrameBack(t, report, 'colour', recorded.length);
  const d = report.depth_vs_recording;
  const measured = d.compared - d.holes;
  t.ok(d.holes > 0, `holes where a stereo camera measures nothing (${d.holes} of ${d.compared} pixels)`);
  t.ok(d.holes < d.compared / 4, 'most of the scene still measured');
  t.equal(d.below_min_range, 0, 'nothing measured nearer than the minimum range');
  // Gaussian noise: beyond 4 sigma is rare (6e-5 of the pixels); a wrong sigma would miss by far.
  t.ok(d.within_tolerance >= measured * 0.999, `measured depth within 4 sigma of the recording (${d.within_tolerance} of ${measured})`);
  t.ok(d.max_error_mm > 0, 'depth is noisy');
});

/**
 * A small scene with known geometry, as a face-check recording: a background at 1.5 m, a block at 0.5 m
 * (a foreground edge), a patch at 0.2 m (nearer than a D435 measures) and a black patch (no texture).
 */
function writeKnownScene(dirPath: string, frames: number): { near: number; dark: number; bands: number } {
  const W = 64, H = 48, F = 52.5, BASELINE_MM = 50;
  fs.mkdirSync(dirPath);
  const index = ['face-check-recording 1', `size ${W} ${H}`, `intrinsics ${F} ${F} 31.5 23.5`];
  const inRect = (x: number, y: number, [x0, y0, x1, y1]: number[]) => x >= x0 && x < x1 && y >= y0 && y < y1;
  const block = [24, 10, 40, 38], near = [4, 4, 10, 10], dark = [44, 30, 54, 40];
  for (let i = 0; i < frames; i++) {
    const rgb = Buffer.alloc(W * H * 3, 128);
    const depth = Buffer.alloc(W * H * 2);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const z = inRect(x, y, near) ? 200 : inRect(x, y, block) ? 500 : 1500;
        depth.writeUInt16BE(z, (y * W + x) * 2);
        if (inRect(x, y, dark)) rgb.fill(5, (y * W + x) * 3, (y * W + x) * 3 + 3);
      }
    }
    fs.writeFileSync(path.join(dirPath, `${i}.ppm`), Buffer.concat([Buffer.from(`P6\n${W} ${H}\n255\n`), rgb]));
    fs.writeFileSync(path.join(dirPath, `${i}.pgm`), Buffer.concat([Buffer.from(`P5\n${W} ${H}\n65535\n`), depth]));
    index.push(`frame ${1_000_000 + Math.round(i * 1e6 / 30)} ${i}.ppm ${i}.pgm`);
  }
  fs.writeFileSync(path.join(dirPath, 'recording.txt'), `${index.join('\n')}\n`);
  // The occlusion band left of each foreground edge: f * B * (1/z_near - 1/z_far) pixels, on each row.
  const band = (zNear: number, zFar: number, rows: number, room: number) => Math.min(room, Math.floor(F * BASELINE_MM * (1 / zNear - 1 / zFar))) * rows;
  return { near: 36 * frames, dark: 100 * frames, bands: (band(500, 1500, 28, 24) + band(200, 1500, 6, 4)) * frames };
}

t.test('the stereo profile: no depth nearer than the minimum range, on black, or left of a foreground edge', skip, async (t) => {
  const scene = path.join(dir, 'known');
  const expected = writeKnownScene(scene, 3);
  const bag = path.join(dir, 'known.bag');
  writeBag(scene, bag);
  const plain = verifyBag(scene, bag);
  t.equal(plain.depth_vs_recording.holes, 0, 'without the profile everything is measured');
  t.equal(plain.depth_vs_recording.below_min_range, expected.near, 'the near patch included');
  writeBag(scene, bag, { stereoProfile: true, seed: 3 });
  const stereo = verifyBag(scene, bag, { stereoProfile: true, seed: 3 });
  t.equal(stereo.depth.exact, 3, 'every frame as written');
  t.equal(stereo.depth_vs_recording.below_min_range, 0, 'nothing measured nearer than the minimum range');
  t.equal(stereo.depth_vs_recording.holes, expected.near + expected.dark + expected.bands,
    `holes: the near patch (${expected.near}), the black patch (${expected.dark}) and the occlusion bands (${expected.bands}), nothing else`);
});

t.test('a separate depth camera: its own intrinsics and the depth-to-colour extrinsics', skip, async (t) => {
  const report = roundTrip({ separateDepthCamera: true });
  everyFrameBack(t, report, 'depth', recorded.filter((f) => f.depth).length);
  everyFrameBack(t, report, 'colour', recorded.length);
  const colour = report.streams.find((s) => s.stream === 'Color')!.intrinsics;
  const depth = report.streams.find((s) => s.stream === 'Depth')!.intrinsics;
  t.ok(depth.fx < colour.fx * 0.8 && depth.fx > colour.fx * 0.6, `a wider depth field of view (fx ${depth.fx} against ${colour.fx})`);
  t.not(depth.cx, colour.cx, 'its own principal point');
  t.equal(report.depth_to_colour_m![0], 0.015, 'about 15 mm along x to the colour camera');
});

t.test('a device without depth', skip, async (t) => {
  const report = roundTrip({ noDepth: true });
  t.same(report.sensors, ['RGB Camera']);
  t.equal(report.depth.frames, 0);
  everyFrameBack(t, report, 'colour', recorded.length);
});
