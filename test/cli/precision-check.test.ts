// `face-check precision-check`: the installed program (bin/face-check.js over dist/, which scripts/test.js
// compiles first) run as a child process with the real engines on photos cut from the npm demo photos. Checks
// what it prints and how it refuses; never its timings.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';

import { INT8_DOT_FLAGS } from '../../src/engine/int8-capability';
import { templateNetworks } from '../../src/engine/template-spec';
import { repoRoot } from '../helpers/errors';
import { faceCrop, groupPhotos, photosSkip } from '../helpers/photos';

const BIN = path.join(repoRoot, 'bin', 'face-check.js');
const compiled = fs.existsSync(path.join(repoRoot, 'dist', 'src', 'cli', 'main.js'));
const skip = !compiled ? 'dist/ not built (npm run build:ts; scripts/test.js does it)' : photosSkip();

interface Run { status: number | null; stdout: string; stderr: string }

/** The program in a child process (spawned, not spawnSync: the test's own timers keep running). */
function faceCheck(args: string[], env: NodeJS.ProcessEnv = {}, bin = BIN): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'precision-check', ...args], {
      env: { ...process.env, NODE_OPTIONS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const int8Files = () => {
  const float32 = templateNetworks(undefined, 'float32');
  return templateNetworks(undefined, 'int8').map((n) => n.file).filter((f, i) => f !== float32[i].file);
};

/** The first processor's flags as /proc/cpuinfo lists them here. */
function cpuFlags(): string[] {
  const info = fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '';
  return /^(?:flags|Features)\s*:(.*)$/m.exec(info)?.[1].trim().split(/\s+/) ?? [];
}

t.test('precision-check', { skip }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-precision-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const photo = (name: string, bytes: Buffer) => {
    fs.writeFileSync(path.join(dir, name), bytes);
    return path.join(dir, name);
  };
  const faceA = photo('a.jpg', await faceCrop('A'));
  const faceC = photo('c.png', await sharp(await faceCrop('C')).png().toBuffer());
  const emptyCache = path.join(dir, 'empty-cache');

  await t.test('text: both precisions, their ratio, the cosine, the CPU line and the recommendation', async (t) => {
    const r = await faceCheck(['--photo', faceA, '--iterations', '5'], { FACE_CHECK_CACHE: emptyCache });
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /int8 form: mobilefacenet/, 'names the networks that run in int8');
    t.match(r.stdout, /float32 p50 \/ p95\s+int8 p50 \/ p95\s+int8\/float32/, 'a column per precision');
    for (const row of ['photo -> template', 'embedding stage']) {
      t.match(r.stdout, new RegExp(`^${row}\\s+\\d+\\.\\d\\d / \\d+\\.\\d\\d ms\\s+\\d+\\.\\d\\d / \\d+\\.\\d\\d ms\\s+\\d+\\.\\d\\d$`, 'm'),
        `${row}: p50 / p95 of both precisions and the ratio`);
    }
    const cosine = Number(/^lowest template cosine float32 vs int8: (\S+)$/m.exec(r.stdout)?.[1]);
    t.ok(cosine >= 0.95 && cosine <= 1, `lowest cosine ${cosine} in [0.95, 1]`);
    t.match(r.stdout, new RegExp(`^int8 dot-product instructions: (yes|none|unknown) on ${process.arch}`, 'm'));
    t.match(r.stdout, /^recommendation: (int8|float32) \(.*the rule: int8 only when .* at least 1\.2x faster.*\)\. Switching precision means a reindex/m);
  });

  await t.test('--format json: one object with both precisions, the CPU as /proc/cpuinfo has it, the recommendation', async (t) => {
    const r = await faceCheck(['--photo', `${faceA},${faceC}`, '--iterations', '6', '--format', 'json'], { FACE_CHECK_CACHE: emptyCache });
    t.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    t.equal(lines.length, 1, 'one line');
    const j = JSON.parse(lines[0]);
    t.same(j.photos, [faceA, faceC]);
    t.equal(j.iterations, 6);
    for (const p of ['float32', 'int8']) {
      for (const stage of ['photoToTemplateMs', 'embedMs']) {
        const s = j[p][stage];
        t.ok(s.p50 > 0 && s.p95 >= s.p50, `${p} ${stage}: p50 ${s.p50} > 0, p95 ${s.p95} >= p50`);
      }
    }
    t.not(j.float32.modelId, j.int8.modelId, 'the precisions carry different model ids');
    t.ok(j.ratio.photoToTemplate > 0 && j.ratio.embed > 0, 'ratios');
    t.ok(j.lowestCosine >= 0.95 && j.lowestCosine <= 1, `lowest cosine ${j.lowestCosine} in [0.95, 1]`);
    t.ok(['int8', 'float32'].includes(j.recommendation.precision), `recommends ${j.recommendation.precision}`);
    t.match(j.recommendation.rule, /at least 1\.2x faster/);
    const expected = (INT8_DOT_FLAGS[process.arch] ?? []).filter((f) => cpuFlags().includes(f));
    t.equal(j.cpu.arch, process.arch);
    t.same(j.cpu.found, expected, `int8 dot-product flags of this CPU: ${expected.join(', ') || 'none'}`);
  });

  await t.test('without --photo: the demo photos the synthetic camera left in the cache, else refused', async (t) => {
    const refused = await faceCheck([], { FACE_CHECK_CACHE: emptyCache });
    t.equal(refused.status, 2, 'usage');
    t.match(refused.stderr, /give --photo <file>, a JPEG or PNG showing one face/);
    t.notOk(fs.existsSync(path.join(emptyCache, 'face-api-demo')), 'nothing was fetched');

    const cache = path.join(dir, 'cache');
    fs.mkdirSync(path.join(cache, 'face-api-demo'), { recursive: true });
    for (const file of groupPhotos()!) fs.copyFileSync(file, path.join(cache, 'face-api-demo', path.basename(file)));
    const r = await faceCheck(['--iterations', '6', '--format', 'json'], { FACE_CHECK_CACHE: cache });
    t.equal(r.status, 0, r.stderr);
    t.same(JSON.parse(r.stdout).photos.map((p: string) => path.basename(p)), groupPhotos()!.map((p) => path.basename(p)));
  });

  await t.test('bad --iterations and --format are refused before any engine is built', async (t) => {
    for (const bad of ['0', '4', '1001', 'ten', '5.5', '-5']) {
      const r = await faceCheck(['--photo', faceA, `--iterations=${bad}`]);
      t.equal(r.status, 2, `--iterations ${bad}: usage`);
      t.match(r.stderr, /--iterations must be a whole number from 5 to 1000/);
    }
    const r = await faceCheck(['--photo', faceA, '--format', 'yaml']);
    t.equal(r.status, 2);
    t.match(r.stderr, /--format text or json/);
  });

  await t.test('a missing photo, a file that is no image, a photo without a face: each its exit code and message', async (t) => {
    const missing = path.join(dir, 'no-such-photo.jpg');
    const r = await faceCheck(['--photo', missing]);
    t.equal(r.status, 66, 'EX_NOINPUT');
    t.match(r.stderr, `precision-check: cannot read the photo ${missing}: ENOENT`);

    const text = photo('notes.jpg', Buffer.from('not a photo\n'));
    const notImage = await faceCheck(['--photo', text]);
    t.equal(notImage.status, 65, 'EX_DATAERR');
    t.match(notImage.stderr, `${text} is not a photo the service decodes`);

    const wall = photo('wall.png', await sharp({ create: { width: 640, height: 480, channels: 3, background: '#8a9aa8' } })
      .composite([{ input: Buffer.from('<svg width="640" height="480"><rect x="200" y="120" width="240" height="240" fill="#40342c"/></svg>') }])
      .png().toBuffer());
    const noFace = await faceCheck(['--photo', `${faceA},${wall}`]);
    t.equal(noFace.status, 65, 'EX_DATAERR');
    t.match(noFace.stderr, `precision-check: no face found in ${wall}: give a photo showing a face`);
  });

  await t.test('the int8 model file missing (the install makes it): refused, naming the file and the fix', async (t) => {
    // The package as installed, but models/ without the int8 files: a copy of what `files` ships, the
    // addon and dependencies linked.
    const pkg = path.join(dir, 'face-check');
    fs.mkdirSync(path.join(pkg, 'models'), { recursive: true });
    for (const f of ['package.json', 'bin', 'config', path.join('dist', 'src')]) {
      fs.cpSync(path.join(repoRoot, f), path.join(pkg, f), { recursive: true });
    }
    for (const f of ['node_modules', 'build', 'prebuilds'].filter((f) => fs.existsSync(path.join(repoRoot, f)))) {
      fs.symlinkSync(path.join(repoRoot, f), path.join(pkg, f));
    }
    const int8 = int8Files();
    t.ok(int8.length > 0, `the manifest lists int8 forms: ${int8.join(', ')}`);
    for (const f of fs.readdirSync(path.join(repoRoot, 'models')).filter((f) => !int8.includes(f))) {
      fs.symlinkSync(path.join(repoRoot, 'models', f), path.join(pkg, 'models', f));
    }
    const r = await faceCheck(['--photo', faceA], {}, path.join(pkg, 'bin', 'face-check.js'));
    t.equal(r.status, 72, 'EX_OSFILE');
    t.match(r.stderr, `the int8 model ${int8[0]} is missing in ${path.join(pkg, 'models')}`);
    t.match(r.stderr, /makes it from models\/int8-calibration\.json; run `node scripts\/fetch-assets\.js models`/);
  });
});
