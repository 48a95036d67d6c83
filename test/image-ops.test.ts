// The native resampling (native/core/image_ops.cpp: crops, letterbox, alignment warps) against a per-pixel
// reference written in native/test/image_ops_test.cpp, bit for bit: the axis-aligned fast path must give
// exactly what the general path gives. Needs a C++ compiler (as building the addon does); skipped without.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';

const root = path.resolve(__dirname, '..');
const compiler = process.env.CXX ?? 'g++';

function hasCompiler(): boolean {
  try {
    execFileSync(compiler, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

t.test('warps and crops equal the per-pixel reference', { skip: hasCompiler() ? false : `no C++ compiler (${compiler})` }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-image-ops-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const exe = path.join(dir, 'image_ops_test');
  // The addon's own flags for this file (CMakeLists.txt): -O3 -fno-math-errno, no ISA flags.
  execFileSync(compiler, ['-std=c++17', '-O3', '-fno-math-errno', '-Wall', '-Wextra', '-Wno-unused-parameter',
    `-I${path.join(root, 'native')}`, path.join(root, 'native', 'test', 'image_ops_test.cpp'),
    path.join(root, 'native', 'core', 'image_ops.cpp'), '-lpthread', '-o', exe], { stdio: 'inherit' });
  let out: string;
  try {
    out = execFileSync(exe, { encoding: 'utf8' });
  } catch (err) {
    out = (err as { stdout?: string }).stdout ?? String(err);
  }
  const lines = out.trim().split('\n');
  const cases = lines.filter((l) => /^(ok|FAIL) /.test(l));
  t.ok(cases.length >= 7, `${cases.length} cases ran`);
  for (const line of cases) t.ok(line.startsWith('ok '), line);
  t.equal(lines.at(-1), '0 failed');
});
