// The liveness self-test through real processes: `face-check record --label` records synthetic sessions of
// each kind, `face-check liveness-eval` replays them, and its JSON agrees with the synthetic camera's own
// ground truth (the kind it drew on every frame, FrameTruth, and what the pipeline decided on the frames as
// drawn). One live face recorded on purpose as a "print" is the wrongly decided session it must list.
// Bad input (no folder, no label, a format this build does not replay) fails with its reason.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { main } from '../../src/cli/main';
import { cameraSourceNames } from '../../src/device/camera-catalog';
import type { EvalResult } from '../../src/device/liveness-eval';
import { readSessionInfo } from '../../src/device/session';
import { tempDir } from '../helpers/app';
import { runScenario } from '../helpers/device';

// What this build replays: its own format, and a RealSense .bag when the realsense source is compiled in
// (it plays every frame); OpenNI2's .oni is not evaluated (its file driver plays at the recorded pace).
const FORMATS = ['face-check', ...(cameraSourceNames().includes('realsense') ? ['bag'] : [])];

const repoRoot = path.resolve(__dirname, '..', '..');
const FRAMES = 12;
const SECONDS = FRAMES / 30;

/** `face-check <args>` as a process (the TypeScript loader flags tap gave this one). */
function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, path.join(repoRoot, 'src', 'cli', 'main.ts'), ...args], { cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Planned {
  /** What the synthetic camera draws. */
  scene: string;
  /** What the operator says it is. */
  label: string;
  seed: number;
  subject: string;
}

const PLAN: Planned[] = [
  { scene: 'live', label: 'live', seed: 4246101, subject: 's01' },
  { scene: 'live', label: 'live', seed: 4246102, subject: 's02' },
  { scene: 'live', label: 'live', seed: 4246103, subject: 's03' },
  { scene: 'print', label: 'print', seed: 4246104, subject: 's01' },
  { scene: 'print', label: 'print', seed: 4246105, subject: 's02' },
  { scene: 'print-bent', label: 'print-bent', seed: 4246106, subject: 's01' },
  { scene: 'screen-tablet', label: 'screen', seed: 4246107, subject: 's02' },
  { scene: 'cutout-eyes', label: 'cutout', seed: 4246108, subject: 's03' },
  // Mislabelled on purpose: a live face filed as a print attack.
  { scene: 'live', label: 'print', seed: 4246109, subject: 's04' },
];

t.test('record labelled sessions, evaluate them: metrics agree with the synthetic ground truth', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const sessions = path.join(dir, 'sessions');
  const ids = PLAN.map((p, i) => `${String(i).padStart(2, '0')}-${p.label}`);
  // Two record processes at a time (two cores).
  for (let i = 0; i < PLAN.length; i += 2) {
    await Promise.all(PLAN.slice(i, i + 2).map(async (p, k) => {
      const ini = path.join(dir, `${ids[i + k]}.ini`);
      fs.writeFileSync(ini, `[server]\nmode = device\n[storage]\npath = db\n[camera]\nsource = synthetic\n[camera.synthetic]\nscenario = ${p.scene}:${SECONDS}\nloop = false\nrealtime = false\nseed = ${p.seed}\n`);
      const r = await cli(['record', '--config', ini, '--out', sessions, '--label', p.label, '--subject', p.subject,
        '--distance-cm', '70', '--note', `synthetic ${p.scene}`, '--session', ids[i + k], '--frames', String(FRAMES)], dir);
      t.equal(r.code, 0, `record ${ids[i + k]}: ${r.stderr}`);
      t.match(r.stdout, new RegExp(`recorded session ${ids[i + k]} \\(${p.label}, subject ${p.subject}, 70 cm\\): ${FRAMES} frames of the synthetic camera`));
    }));
  }
  const info = readSessionInfo(path.join(sessions, ids[6]));
  t.match(info, { label: 'screen', subject: 's02', distanceCm: 70, note: 'synthetic screen-tablet', recording: { format: 'face-check', path: 'recording', frames: FRAMES }, camera: { source: 'synthetic', seed: 4246107 } });
  t.ok(fs.existsSync(path.join(sessions, ids[6], 'recording', 'recording.txt')), 'the recording beside session.json');

  const jsonFile = path.join(dir, 'eval.json');
  const htmlFile = path.join(dir, 'report.html');
  const r = await cli(['liveness-eval', sessions, '--json', jsonFile, '--html', htmlFile], dir);
  t.equal(r.code, 0, r.stderr);
  const result = JSON.parse(fs.readFileSync(jsonFile, 'utf8')) as EvalResult;
  t.match(r.stdout, /worst-case APCER: 33\.33 % \(print\)/, 'the summary on stdout when the JSON goes to a file');

  // Ground truth: the same scenes drawn in this process, with the synthetic camera's truth on every frame.
  const truth = new Map<string, { accepted: boolean; decisionMs: number | null; liveFrames: number }>();
  for (const [i, p] of PLAN.entries()) {
    const { frames } = await runScenario(`${p.scene}:${SECONDS}`, p.seed);
    t.equal(frames.length, FRAMES, `${ids[i]}: ${FRAMES} frames drawn`);
    t.ok(frames.every((f) => f.truth.kind === p.scene), `${ids[i]}: every frame is a ${p.scene}`);
    const live = frames.filter((f) => f.liveId > 0);
    truth.set(ids[i], { accepted: live.length > 0, decisionMs: live.length ? (live[0].timestampUs - frames[0].timestampUs) / 1000 : null, liveFrames: live.length });
  }
  t.same(result.sessions.map((s) => s.session), ids, 'every session, in id order');
  for (const s of result.sessions) {
    const g = truth.get(s.session)!;
    t.equal(s.frames, FRAMES, `${s.session}: every frame replayed`);
    t.same({ accepted: s.accepted, decisionMs: s.decisionMs, liveFrames: s.liveFrames }, g, `${s.session}: the replay decides as the pipeline did on the frames drawn`);
  }
  // What the synthetic camera drew: live faces pass, attacks do not (test/device/device-liveness.test.ts).
  t.same(PLAN.map((p, i) => truth.get(ids[i])!.accepted), PLAN.map((p) => p.scene === 'live'), 'ground truth: only the live scenes pass');

  const m = result.metrics;
  t.same(m.counts, { live: 3, cutout: 1, print: 3, 'print-bent': 1, screen: 1 }, 'presentations per label');
  t.same(Object.fromEntries(Object.entries(m.apcer).map(([k, v]) => [k, [v.errors, v.presentations]])),
    { cutout: [0, 1], print: [1, 3], 'print-bent': [0, 1], screen: [0, 1] }, 'APCER: the mislabelled live face is the one accepted "print"');
  t.equal(m.apcer.print.rate, 1 / 3);
  t.same(m.worstCaseApcer && [m.worstCaseApcer.label, m.worstCaseApcer.rate], ['print', 1 / 3]);
  t.same([m.bpcer.errors, m.bpcer.presentations, m.bpcer.rate], [0, 3, 0], 'BPCER: every live face accepted');
  t.same(m.wronglyDecided.map((w) => [w.session, w.label, w.error]), [[ids[8], 'print', 'attack accepted']], 'the mislabelled session is listed');
  const liveTimes = ids.slice(0, 3).map((id) => truth.get(id)!.decisionMs!).sort((a, b) => a - b);
  t.equal(m.decisionMs.n, 3);
  t.equal(m.decisionMs.max, liveTimes[2], 'decision time in the recording\'s clock');
  t.ok(liveTimes.every((ms) => ms > 0 && ms < SECONDS * 1000), 'decided within the session');
  t.same(result.formats, FORMATS);

  const html = fs.readFileSync(htmlFile, 'utf8');
  t.match(html, /<svg[^>]*>/, 'the HTML report has its chart');
  t.match(html, new RegExp(ids[8]), 'and lists the wrongly decided session');
  t.notMatch(html, /<img\b|data:image|<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/i, 'no image, no script, no external resource');

  // The JSON on stdout without --json.
  const onStdout = await cli(['liveness-eval', sessions], dir);
  t.equal(onStdout.code, 0, onStdout.stderr);
  t.same((JSON.parse(onStdout.stdout) as EvalResult).metrics, m, 'the same metrics on stdout');
  t.match(onStdout.stderr, new RegExp(`9/9 ${ids[8]} \\(print\\): accepted after`), 'progress on stderr');

  // Bad input: each a clear reason and a non-zero exit.
  const missing = await cli(['liveness-eval', path.join(dir, 'nowhere')], dir);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /nowhere: no such folder/);
  const copy = (name: string, edit: (o: Record<string, unknown>) => void) => {
    const folder = path.join(dir, name);
    fs.cpSync(path.join(sessions, ids[0]), path.join(folder, ids[0]), { recursive: true });
    const file = path.join(folder, ids[0], 'session.json');
    const o = JSON.parse(fs.readFileSync(file, 'utf8'));
    edit(o);
    fs.writeFileSync(file, JSON.stringify(o));
    return folder;
  };
  const unlabelled = await cli(['liveness-eval', copy('unlabelled', (o) => { delete o.label; })], dir);
  t.equal(unlabelled.code, 1);
  t.match(unlabelled.stderr, new RegExp(`session ${ids[0]}: session.json: no label`));
  const oni = await cli(['liveness-eval', copy('oni', (o) => { o.recording = { format: 'oni', path: 'recording.oni', frames: 12 }; })], dir);
  t.equal(oni.code, 1);
  t.match(oni.stderr, new RegExp(`session ${ids[0]}: format oni not supported by this build \\(supported: ${FORMATS.join(', ')}\\)`));
  t.equal(oni.stdout, '', 'no result printed');
  const notSession = path.join(dir, 'stray');
  fs.mkdirSync(path.join(notSession, 'photos'), { recursive: true });
  const stray = await cli(['liveness-eval', notSession], dir);
  t.equal(stray.code, 1);
  t.match(stray.stderr, /session photos: no session\.json \(not a session folder\)/);
});

t.test('command-line usage of record --label and liveness-eval', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  const run = async (args: string[]) => { lines.length = 0; return main(args, io); };
  t.equal(await run(['liveness-eval']), 2, 'no folder: usage');
  t.match(lines.join('\n'), /liveness-eval needs one folder of sessions/);
  t.equal(await run(['record', '--out', path.join(dir, 's'), '--label', 'Print Attack']), 2, 'a bad label: usage');
  t.match(lines.join('\n'), /label "Print Attack": 1-32 characters/);
  t.equal(await run(['record', '--out', path.join(dir, 's'), '--label', 'print', '--distance-cm', 'far']), 2);
  t.match(lines.join('\n'), /--distance-cm must be a number of centimetres/);
  t.equal(await run(['record', '--out', path.join(dir, 's'), '--label', 'print', '--format', 'fakenect']), 2);
  t.match(lines.join('\n'), new RegExp(`sessions \\(--label\\) are recorded in ${FORMATS.join(' or ')} \\(the formats liveness-eval replays\\)`));
  t.equal(await run(['record', '--out', path.join(dir, 's'), '--subject', 's01']), 2, 'session details without a label');
  t.match(lines.join('\n'), /--subject describes a labelled session: give --label too/);
  t.notOk(fs.existsSync(path.join(dir, 's')), 'nothing recorded');
  t.equal(await run(['liveness-eval', dir]), 1, 'a folder without sessions');
  t.match(lines.join('\n'), /no sessions \(record some with face-check record/);
});
