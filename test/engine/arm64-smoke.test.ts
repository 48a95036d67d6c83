// arm64 without a compiler on the board (docs/arm64.md). The package as `npm pack` makes it is installed
// for arm64 and run by an arm64 node under qemu-user: its install step loads the cross-built prebuild and
// compiles nothing (no compiler, npm or build tool on PATH), and the prebuild analyses a real photo like
// the x64 prebuild of the same tarball (same faces, boxes within 1 px, template cosine >= 0.999 with the
// float32 template networks, >= ARM64_INT8_MIN_COSINE with the int8 ones, whose int8 kernels differ) while
// its NEON index kernels agree with the scalar ones (int8 bit-identical, float32 within 1e-6, searches
// with the same keys). Needs `npm run prebuild` first; skipped, with the reason, where qemu-user or the
// cross toolchain is absent, and failed instead when FACE_CHECK_REQUIRE_ARM64=1 (CI).
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';

import { nativeTemplateNetworks, templateNetworks, type Precision } from '../../src/engine/template-spec';
import { packageRoot } from '../../src/package-root';
import { arm64Unavailable, Arm64Runner, withoutNodeOptions } from '../helpers/arm64-qemu';
import { groupPhoto, photosSkip } from '../helpers/photos';

const root = packageRoot();
const PROBE = path.join(root, 'test', 'helpers', 'arm64-probe.js');
const PHOTO = 5; // the demo group photo with the most faces (five)
// ONNX Runtime's int8 kernels differ between x64 (AVX2 u8s8) and arm64 (dot-product instructions): the
// int8 networks' templates agree less closely across the two than the float32 ones (docs/arm64.md).
const ARM64_INT8_MIN_COSINE = 0.98;
// What the install step would look for to build the addon: each records its call and fails.
const BUILD_TOOLS = ['cc', 'gcc', 'g++', 'c++', 'clang', 'make', 'cmake', 'cmake-js', 'node-gyp', 'npm', 'npx', 'python3'];

interface ProbeFace { box: { x: number; y: number; width: number; height: number; score: number }; embedding: number[] }
interface Count { checked: number; mismatches: number }
interface KernelCheck {
  dotI8: Count; scanI8: Count;
  dotF32: { checked: number; failures: number; worstRelative: number };
  search: { queries: number; hits: number; keyMismatches: number; worstScoreDiff: number };
}
interface ProbeResult {
  arch: string; node: string; addonPath: string; kernels: string[]; activeKernel: string;
  loadSeconds: number; analyseSeconds: number; kernelSeconds: number;
  faces: ProbeFace[]; kernelChecks: Record<string, KernelCheck>;
}

function unavailable(): string | false {
  const tools = arm64Unavailable();
  if (tools) return tools;
  for (const arch of ['x64', 'arm64']) {
    if (!fs.existsSync(path.join(root, 'prebuilds', `linux-${arch}`, 'face-check.node'))) {
      return `prebuilds/linux-${arch}/face-check.node missing: run npm run prebuild first`;
    }
  }
  return photosSkip();
}

/**
 * `npm pack`, then the tarball laid out as npm installs it for a consumer: the package under
 * node_modules/face-check, beside it node-gyp-build and onnxruntime-node (its package.json and the two
 * platform libraries only), and the models its install step would otherwise fetch from the registry.
 */
function packAndLayOut(dir: string): { packageDir: string; modules: string; packed: string[] } {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
    cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
  })) as { filename: string; files: { path: string }[] }[];
  const modules = path.join(dir, 'consumer', 'node_modules');
  fs.mkdirSync(modules, { recursive: true });
  execFileSync('tar', ['-xzf', path.join(dir, pack.filename), '-C', modules]);
  const packageDir = path.join(modules, 'face-check');
  fs.renameSync(path.join(modules, 'package'), packageDir);
  fs.symlinkSync(path.join(root, 'node_modules', 'node-gyp-build'), path.join(modules, 'node-gyp-build'));
  const ort = path.join(root, 'node_modules', 'onnxruntime-node');
  fs.mkdirSync(path.join(modules, 'onnxruntime-node'));
  fs.copyFileSync(path.join(ort, 'package.json'), path.join(modules, 'onnxruntime-node', 'package.json'));
  for (const arch of ['x64', 'arm64']) {
    const lib = path.join('bin', 'napi-v6', 'linux', arch, 'libonnxruntime.so.1');
    fs.mkdirSync(path.dirname(path.join(modules, 'onnxruntime-node', lib)), { recursive: true });
    fs.symlinkSync(path.join(ort, lib), path.join(modules, 'onnxruntime-node', lib));
  }
  for (const model of fs.readdirSync(path.join(root, 'models')).filter((f) => f.endsWith('.onnx'))) {
    fs.copyFileSync(path.join(root, 'models', model), path.join(packageDir, 'models', model));
  }
  return { packageDir, modules, packed: pack.files.map((f) => f.path) };
}

/** A folder of stand-ins for every build tool: each appends its command line to `log` and fails. */
function buildToolTripwires(dir: string, log: string): string {
  const bin = path.join(dir, 'no-build-tools');
  fs.mkdirSync(bin);
  for (const tool of BUILD_TOOLS) {
    fs.writeFileSync(path.join(bin, tool), `#!/bin/sh\necho "$0 $*" >> '${log}'\nexit 1\n`, { mode: 0o755 });
  }
  return bin;
}

function probeResult(run: SpawnSyncReturns<string>, arch: string): ProbeResult {
  if (run.status !== 0) throw new Error(`${arch} probe failed (status ${run.status}, ${run.signal ?? 'no signal'}): ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as ProbeResult;
}

const cosine = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0);
const byX = (faces: ProbeFace[]) => [...faces].sort((a, b) => a.box.x - b.box.x);
const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

const reason = unavailable();
if (reason && process.env.FACE_CHECK_REQUIRE_ARM64 === '1') {
  t.fail(`arm64 smoke test cannot run: ${reason} (FACE_CHECK_REQUIRE_ARM64=1)`);
} else {
  t.test('the packed package on arm64 (qemu): installs without compiling, analyses like x64, NEON kernels agree with scalar',
    { skip: reason ? `arm64 smoke test skipped: ${reason}` : false }, async (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-arm64-'));
      const arm = new Arm64Runner();
      t.teardown(() => {
        arm.close();
        fs.rmSync(dir, { recursive: true, force: true });
      });

      let started = Date.now();
      const { packageDir, modules, packed } = packAndLayOut(dir);
      for (const arch of ['x64', 'arm64']) t.ok(packed.includes(`prebuilds/linux-${arch}/face-check.node`), `npm pack ships prebuilds/linux-${arch}`);
      t.comment(`packed and laid out in ${seconds(started)} s`);

      // The package's install step (package.json "install"), as npm runs it, under the arm64 node.
      const toolLog = path.join(dir, 'build-tools.log');
      const tripwires = buildToolTripwires(dir, toolLog);
      started = Date.now();
      const install = arm.run([path.join(packageDir, 'scripts', 'install.js')], {
        cwd: packageDir, env: { PATH: tripwires, HOME: os.homedir(), FACE_CHECK_CACHE: path.join(dir, 'empty-cache') },
      });
      t.comment(`install step under qemu: ${seconds(started)} s`);
      t.equal(install.status, 0, `install step succeeds on arm64${install.status ? `: ${install.stderr}` : ''}`);
      t.notOk(fs.existsSync(toolLog), `no build tool was called${fs.existsSync(toolLog) ? `: ${fs.readFileSync(toolLog, 'utf8')}` : ''}`);
      t.notOk(fs.existsSync(path.join(packageDir, 'build')), 'no build/ folder was made');

      const { data, info } = await sharp(groupPhoto(PHOTO)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      const image = { file: path.join(dir, 'photo.rgb'), width: info.width, height: info.height };
      fs.writeFileSync(image.file, data);
      const job = (arch: string, precision: Precision) => JSON.stringify({
        packageDir, modelDir: path.join(packageDir, 'models'), image,
        ortLibrary: path.join(modules, 'onnxruntime-node', 'bin', 'napi-v6', 'linux', arch, 'libonnxruntime.so.1'),
        templateNetworks: nativeTemplateNetworks(templateNetworks(undefined, precision)),
      });
      // the int8 template networks: arm64's int8 kernels against x64's, within the documented bound
      const int8Job = job('x64', 'int8');
      const x64Int8 = probeResult(spawnSync(process.execPath, [PROBE, int8Job], {
        cwd: packageDir, env: withoutNodeOptions(), encoding: 'utf8', maxBuffer: 64 << 20,
      }), 'x64');
      started = Date.now();
      const arm64Int8 = probeResult(arm.run([PROBE, job('arm64', 'int8')], { cwd: packageDir }), 'arm64');
      t.comment(`arm64 int8 probe under qemu: ${seconds(started)} s`);
      t.equal(arm64Int8.faces.length, x64Int8.faces.length, 'int8: arm64 finds as many faces');
      const int8Pairs = byX(x64Int8.faces).map((face, i) => [face, byX(arm64Int8.faces)[i]] as const).filter(([, other]) => other);
      const int8Cosine = Math.min(1, ...int8Pairs.map(([a, b]) => cosine(a.embedding, b.embedding)));
      // each network's part alone, for the record (docs/arm64.md)
      let offset = 0;
      for (const { id, size } of templateNetworks(undefined, 'int8')) {
        const part = (e: number[]) => e.slice(offset, offset + size);
        const partCosine = (a: number[], b: number[]) => cosine(a, b) / Math.sqrt(cosine(a, a) * cosine(b, b));
        const lowest = Math.min(1, ...int8Pairs.map(([a, b]) => partCosine(part(a.embedding), part(b.embedding))));
        t.comment(`int8 run, ${id}: lowest cosine x64 vs arm64 ${lowest.toFixed(6)}`);
        offset += size;
      }
      t.ok(int8Pairs.length >= 3 && int8Cosine >= ARM64_INT8_MIN_COSINE,
        `int8 templates agree across x64 and arm64 (lowest cosine ${int8Cosine.toFixed(6)} >= ${ARM64_INT8_MIN_COSINE})`);

      const x64 = probeResult(spawnSync(process.execPath, [PROBE, job('x64', 'float32')], {
        cwd: packageDir, env: withoutNodeOptions(), encoding: 'utf8', maxBuffer: 64 << 20,
      }), 'x64');
      started = Date.now();
      const arm64 = probeResult(arm.run([PROBE, job('arm64', 'float32')], { cwd: packageDir }), 'arm64');
      t.comment(`arm64 probe under qemu: ${seconds(started)} s (engine load ${arm64.loadSeconds} s, analysis ${arm64.analyseSeconds} s ` +
        `vs ${x64.analyseSeconds} s on x64, kernel checks ${arm64.kernelSeconds} s)`);

      t.equal(arm64.arch, 'arm64', `the probe ran on arm64 node ${arm64.node}`);
      t.equal(x64.arch, 'x64', 'the reference ran on x64');
      t.equal(arm64.addonPath, path.join(packageDir, 'prebuilds', 'linux-arm64', 'face-check.node'), 'arm64 loads the arm64 prebuild of the tarball');
      t.equal(x64.addonPath, path.join(packageDir, 'prebuilds', 'linux-x64', 'face-check.node'), 'x64 loads the x64 prebuild of the tarball');

      t.ok(x64.faces.length >= 3, `x64 finds ${x64.faces.length} faces in group photo ${PHOTO}`);
      t.equal(arm64.faces.length, x64.faces.length, 'arm64 finds as many faces');
      const pairs = byX(x64.faces).map((face, i) => [face, byX(arm64.faces)[i]] as const).filter(([, other]) => other);
      const boxDiff = Math.max(0, ...pairs.map(([a, b]) => Math.max(
        Math.abs(a.box.x - b.box.x), Math.abs(a.box.y - b.box.y), Math.abs(a.box.width - b.box.width))));
      const worstCosine = Math.min(1, ...pairs.map(([a, b]) => cosine(a.embedding, b.embedding)));
      t.ok(boxDiff <= 1, `boxes agree within 1 px (largest difference ${boxDiff.toFixed(4)} px)`);
      t.ok(worstCosine >= 0.999, `float32 templates agree (lowest cosine ${worstCosine.toFixed(7)})`);
      t.ok(pairs.every(([a, b]) => a.embedding.length === b.embedding.length && a.embedding.length > 0), 'templates of the same size');

      t.same(arm64.kernels, ['scalar', 'neon'], 'arm64 kernels: scalar and NEON');
      t.equal(arm64.activeKernel, 'neon', 'NEON is picked at run time');
      const neon = arm64.kernelChecks.neon;
      t.ok(neon, 'NEON was compared with scalar');
      if (!neon) return;
      t.ok(neon.dotI8.checked > 0 && neon.dotI8.mismatches === 0, `int8 dot products bit-identical (${neon.dotI8.mismatches} of ${neon.dotI8.checked} differ)`);
      t.ok(neon.scanI8.checked > 0 && neon.scanI8.mismatches === 0, `int8 block scans bit-identical (${neon.scanI8.mismatches} of ${neon.scanI8.checked} sums differ)`);
      t.ok(neon.dotF32.checked > 0 && neon.dotF32.failures === 0,
        `float32 dot products within 1e-6 (${neon.dotF32.failures} of ${neon.dotF32.checked} outside; worst relative ${neon.dotF32.worstRelative.toExponential(2)})`);
      t.equal(neon.search.hits, neon.search.queries * 10, `searched ${neon.search.queries} queries, 10 hits each`);
      t.equal(neon.search.keyMismatches, 0, 'searches return the same keys in the same order');
      t.ok(neon.search.worstScoreDiff <= 1e-5, `scores within 1e-5 (${neon.search.worstScoreDiff.toExponential(2)})`);
    });
}
