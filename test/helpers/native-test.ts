// Builds and runs a stand-alone C++ check from native/test with the addon's own flags for that code
// (CMakeLists.txt: -O3 -fno-math-errno, no ISA flags). Such checks print `ok <case>` / `FAIL <case>` lines
// and end with `<N> failed`. Needs a C++ compiler (as building the addon does): `compilerSkip` says why not.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const compiler = process.env.CXX ?? 'g++';

/** False when a C++ compiler runs, else the reason to skip. */
export function compilerSkip(): false | string {
  try {
    execFileSync(compiler, ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return `no C++ compiler (${compiler})`;
  }
}

/** Compiles `sources` (paths under native/) into a temporary program, runs it and returns its output lines. */
export function runNativeCheck(name: string, sources: string[]): { cases: string[]; last: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `face-check-${name}-`));
  try {
    const exe = path.join(dir, name);
    execFileSync(compiler, ['-std=c++17', '-O3', '-fno-math-errno', '-Wall', '-Wextra', '-Wno-unused-parameter',
      `-I${path.join(root, 'native')}`, ...sources.map((s) => path.join(root, 'native', s)), '-lpthread', '-o', exe],
    { stdio: 'inherit' });
    let out: string;
    try {
      out = execFileSync(exe, { encoding: 'utf8' });
    } catch (err) {
      out = (err as { stdout?: string }).stdout ?? String(err);
    }
    const lines = out.trim().split('\n');
    return { cases: lines.filter((l) => /^(ok|FAIL) /.test(l)), last: lines.at(-1) ?? '' };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
