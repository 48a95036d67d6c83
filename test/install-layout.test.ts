// The package installed as a dependency of another project: npm hoists onnxruntime-node beside it, and
// the addon must still find libonnxruntime.so.1 (resolved from the package, then dlopen'ed).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';

import { packageRoot } from '../src/package-root';

const root = packageRoot();

t.test('loads the engine from a hoisted node_modules layout', async (t) => {
  const consumer = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-consumer-'));
  t.teardown(() => fs.rmSync(consumer, { recursive: true, force: true }));
  const modules = path.join(consumer, 'node_modules');
  const pkg = path.join(modules, 'face-check');
  fs.mkdirSync(pkg, { recursive: true });
  // The package's own files, copied (not linked, so Node resolves from the consumer's tree). When a prebuild
  // exists (npm run prebuild) it alone is shipped, as a published package would be; else the local build.
  const addon = fs.existsSync(path.join(root, 'prebuilds')) ? 'prebuilds' : path.join('build', 'Release');
  for (const entry of ['package.json', 'dist', 'models', addon]) {
    fs.cpSync(path.join(root, entry), path.join(pkg, entry), { recursive: true });
  }
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
      console.log(JSON.stringify({ lib, faces: faces.length, addonPath }));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: consumer, encoding: 'utf8' }).trim());
  t.equal(out.faces, 0, 'engine loaded and analysed an image');
  t.ok(out.lib.startsWith(path.join(modules, 'onnxruntime-node')), `libonnxruntime from the hoisted package: ${out.lib}`);
  t.ok(out.addonPath.startsWith(path.join(pkg, addon)), `addon loaded from ${addon}: ${out.addonPath}`);
});
