// Builds and runs stand-alone C++ checks from native/test with the addon's own compiler flags
// (native/build-flags.json: `cxx` for every file, `isa` for a kernel file of one instruction set). Such
// checks print `ok <case>` / `FAIL <case>` lines and end with a summary line. Needs a C++ compiler (as
// building the addon does): `compilerSkip` says why not.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const compiler = process.env.CXX ?? 'g++';

interface BuildFlags {
  cxx: string[];
  isa: Record<string, string[]>;
}
interface SourceList {
  core: string[];
  [key: string]: string[];
}

/** native/build-flags.json, the flags both addon builds use. */
export const buildFlags: BuildFlags = JSON.parse(fs.readFileSync(path.join(root, 'native', 'build-flags.json'), 'utf8'));
/** native/sources.json, the source list both addon builds use (paths relative to the repository). */
export const sourceList: SourceList = JSON.parse(fs.readFileSync(path.join(root, 'native', 'sources.json'), 'utf8'));

/** A source under native/, compiled with the flags of one instruction set when `isa` is given. */
export type NativeSource = string | { path: string; isa: string };

/** False when a C++ compiler runs, else the reason to skip. */
export function compilerSkip(): false | string {
  try {
    execFileSync(compiler, ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return `no C++ compiler (${compiler})`;
  }
}

/** A built check: `run` executes it (with extra environment variables), `remove` deletes it. */
export interface NativeProgram {
  run(env?: Record<string, string>): { cases: string[]; last: string; status: number };
  remove(): void;
}

/**
 * Compiles `sources` into a temporary program. Files with an instruction set are compiled on their own
 * with that set's flags added, as the addon builds do, so that nothing else may use those instructions.
 */
export function buildNativeCheck(name: string, sources: NativeSource[]): NativeProgram {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `face-check-${name}-`));
  const common = [...buildFlags.cxx, `-I${path.join(root, 'native')}`];
  const compile = (args: string[]) => execFileSync(compiler, [...common, ...args], { stdio: 'inherit' });
  try {
    const inputs = sources.map((s, i) => {
      if (typeof s === 'string') return path.join(root, 'native', s);
      const flags = buildFlags.isa[s.isa];
      if (!flags) throw new Error(`no flags for instruction set ${s.isa} in native/build-flags.json`);
      const object = path.join(dir, `${i}-${path.basename(s.path)}.o`);
      compile([...flags, '-c', path.join(root, 'native', s.path), '-o', object]);
      return object;
    });
    const exe = path.join(dir, name);
    compile([...inputs, '-lpthread', '-o', exe]);
    return {
      run(env = {}) {
        let out: string;
        let status = 0;
        try {
          out = execFileSync(exe, { encoding: 'utf8', env: { ...process.env, ...env } });
        } catch (err) {
          const e = err as { stdout?: string; status?: number };
          out = e.stdout ?? String(err);
          status = e.status ?? 1;
        }
        const lines = out.trim().split('\n');
        return { cases: lines.filter((l) => /^(ok|FAIL) /.test(l)), last: lines.at(-1) ?? '', status };
      },
      remove: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Compiles `sources` (paths under native/) into a temporary program, runs it once and returns its output lines. */
export function runNativeCheck(name: string, sources: NativeSource[]): { cases: string[]; last: string } {
  const program = buildNativeCheck(name, sources);
  try {
    const { cases, last } = program.run();
    return { cases, last };
  } finally {
    program.remove();
  }
}
