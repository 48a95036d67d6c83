// A board without a toolchain, for running the real installation command: a PATH of links to the tools the
// command and npm need and nothing else, with a stand-in for every compiler, make, cmake and python that
// records being called and fails. Optionally a fake `uname -m` and `node -v` (the board's, not this
// machine's). runOnBoard runs a command as an operator does there: sh, that PATH only, none of this
// environment's build settings.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** What builds native code: none may run while a package installs on a board. */
export const TOOLCHAIN = ['cc', 'gcc', 'g++', 'c++', 'cpp', 'clang', 'clang++', 'ld', 'make', 'gmake', 'cmake', 'ninja', 'python',
  'python3', 'node-gyp', 'aarch64-linux-gnu-gcc', 'aarch64-linux-gnu-g++', 'aarch64-linux-gnu-ld', 'aarch64-linux-gnu-strip',
  'x86_64-linux-gnu-gcc', 'x86_64-linux-gnu-g++'];
/** What the command and npm run: the board's whole PATH. */
export const BOARD_TOOLS = ['sh', 'curl', 'sha256sum', 'npm', 'node', 'uname', 'id', 'mktemp', 'rm', 'tar', 'gzip', 'env'];

function which(tool: string): string {
  return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
}

export interface Board {
  /** The folder that is the board's whole PATH. */
  bin: string;
  /** One line per toolchain program called. */
  calls: () => string[];
}

/**
 * A PATH of symlinks to the board's tools, stand-ins for the toolchain, and optionally a fake `uname -m`
 * and `node -v` (the board's, not the SDK's): tiny scripts earlier on PATH.
 */
export function board(dir: string, opts: { machine?: string; nodeVersion?: string; omit?: string[] } = {}): Board {
  const bin = path.join(dir, 'board-bin');
  const log = path.join(dir, 'toolchain-calls.log');
  fs.mkdirSync(bin, { recursive: true });
  for (const tool of BOARD_TOOLS.filter((x) => !opts.omit?.includes(x))) fs.symlinkSync(which(tool), path.join(bin, tool));
  for (const tool of TOOLCHAIN) {
    fs.writeFileSync(path.join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> "${log}"\nexit 1\n`, { mode: 0o755 });
  }
  if (opts.machine) {
    fs.rmSync(path.join(bin, 'uname'));
    fs.writeFileSync(path.join(bin, 'uname'), `#!/bin/sh\n[ "$1" = -m ] && { echo ${opts.machine}; exit 0; }\nexec ${which('uname')} "$@"\n`, { mode: 0o755 });
  }
  if (opts.nodeVersion) {
    fs.rmSync(path.join(bin, 'node'));
    fs.writeFileSync(path.join(bin, 'node'), `#!/bin/sh\n[ "$1" = -v ] && { echo v${opts.nodeVersion}; exit 0; }\nexec ${process.execPath} "$@"\n`, { mode: 0o755 });
  }
  return { bin, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) };
}

export interface BoardRun {
  code: number;
  stdout: string;
  stderr: string;
  seconds: number;
  /** The TMPDIR the command ran with. */
  tmp: string;
}

/** The command as an operator runs it: sh, the board's PATH only, nothing of this environment's build settings. */
export async function runOnBoard(command: string, b: Board, dir: string, root: string): Promise<BoardRun> {
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp, { recursive: true });
  const env: Record<string, string> = {
    PATH: b.bin, HOME: os.homedir(), TMPDIR: tmp, FACE_CHECK_PREFIX: root,
    // Dependencies from npm's cache (the registry only when a package is not there).
    npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false',
  };
  for (const name of ['npm_config_cache', 'FACE_CHECK_CACHE']) if (process.env[name]) env[name] = process.env[name]!;
  const started = Date.now();
  const r = await execFileAsync('/bin/sh', ['-c', command], { env, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }));
  return { ...r, seconds: (Date.now() - started) / 1000, tmp };
}
