// The package installed as a dependency of another project: npm hoists onnxruntime-node beside it, and
// the addon must still find libonnxruntime.so.1 (resolved from the package, then dlopen'ed), and everything the
// service reads at run time must be among the files the package publishes.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';

import { packageRoot } from '../../src/package-root';

const root = packageRoot();

t.test('loads the engine and the service from the published files in a hoisted node_modules layout', async (t) => {
  const consumer = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-consumer-'));
  t.teardown(() => fs.rmSync(consumer, { recursive: true, force: true }));
  const modules = path.join(consumer, 'node_modules');
  const pkg = path.join(modules, 'face-check');
  fs.mkdirSync(pkg, { recursive: true });
  // Exactly the files a published package holds (`npm pack` lists them from package.json `files`), copied
  // (not linked, so Node resolves from the consumer's tree); then what its install step adds: the models
  // (fetched and rewritten) and, when no prebuild exists (npm run prebuild), the local build of the addon.
  const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
  }))[0].files.map((f: { path: string }) => f.path) as string[];
  for (const file of packed) {
    fs.mkdirSync(path.dirname(path.join(pkg, file)), { recursive: true });
    fs.copyFileSync(path.join(root, file), path.join(pkg, file));
  }
  for (const model of fs.readdirSync(path.join(root, 'models')).filter((f) => f.endsWith('.onnx'))) {
    fs.copyFileSync(path.join(root, 'models', model), path.join(pkg, 'models', model));
  }
  const addon = fs.existsSync(path.join(root, 'prebuilds')) ? 'prebuilds' : path.join('build', 'Release');
  if (addon !== 'prebuilds') fs.cpSync(path.join(root, addon), path.join(pkg, addon), { recursive: true });
  // ... and its dependencies hoisted beside it, as npm lays them out.
  // onnxruntime-node is copied (its package.json and this platform's library), the rest linked.
  for (const dep of fs.readdirSync(path.join(root, 'node_modules'))) {
    if (dep.startsWith('.') || dep === 'onnxruntime-node') continue;
    fs.symlinkSync(path.join(root, 'node_modules', dep), path.join(modules, dep));
  }
  const ort = path.join(root, 'node_modules', 'onnxruntime-node');
  const libDir = path.join('bin', 'napi-v6', 'linux', process.arch);
  fs.mkdirSync(path.join(modules, 'onnxruntime-node', libDir), { recursive: true });
  fs.copyFileSync(path.join(ort, 'package.json'), path.join(modules, 'onnxruntime-node', 'package.json'));
  fs.copyFileSync(path.join(ort, libDir, 'libonnxruntime.so.1'), path.join(modules, 'onnxruntime-node', libDir, 'libonnxruntime.so.1'));
  const script = `
    const { createEngine } = require('face-check/dist/src/engine');
    const { resolveOrtLibrary } = require('face-check/dist/src/engine/ort-library');
    (async () => {
      const lib = resolveOrtLibrary(require.resolve('face-check/package.json'));
      const engine = await createEngine();
      const faces = await engine.analyze({ data: new Uint8Array(64 * 48 * 3).fill(90), width: 64, height: 48 });
      await engine.close();
      const addonPath = require('node-gyp-build').path(require('path').dirname(require.resolve('face-check/package.json')));
      // the whole service loads from the published files too (configuration, similarity scale, routes)
      const { buildApp, defaultConfig } = require('face-check');
      const service = typeof buildApp === 'function' && typeof defaultConfig === 'function';
      console.log(JSON.stringify({ lib, faces: faces.length, addonPath, service }));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: consumer, encoding: 'utf8' }).trim());
  t.equal(out.faces, 0, 'engine loaded and analysed an image');
  t.ok(out.lib.startsWith(path.join(modules, 'onnxruntime-node')), `libonnxruntime from the hoisted package: ${out.lib}`);
  t.ok(out.addonPath.startsWith(path.join(pkg, addon)), `addon loaded from ${addon}: ${out.addonPath}`);
  t.ok(out.service, 'the service module loads (buildApp, defaultConfig)');
});
