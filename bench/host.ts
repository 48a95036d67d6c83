// npm run bench:host — what this host charges for the things a start-up is made of, so that start-up figures
// measured on different days can be compared: node's own boot (`node -e 0`, spawned), the first write to
// fresh memory (page faults: on some virtual machines each costs ~10 µs, ten times a bare one, and a start
// that fills hundreds of MB of index pays it per 4 KiB page) against writing memory already faulted in, and
// AES-256-GCM into a reused buffer. bench:index and bench:scale put the same profile in their JSON line
// (measured in a child: measureHostInChild).
// Ends with one JSON line.
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';

import { percentile, printJsonLine } from './common';
import { droppedStartVariables, serviceProcessEnv } from './service-env';

const PAGE = 4096;
const BLOCK = 64 << 20;  // one allocation: large enough to be its own mapping, returned to the OS when freed
const BLOCKS = 4;

export interface HostProfile {
  cpu: string;
  cpus: number;
  node: string;
  kernel: string;
  /** The kernel command line names a paravirtualised MMU (PVM guests), where page faults are costly. */
  pvmGuest: boolean;
  /** `node -e 0` spawned and waited for, in the environment a service gets (./service-env.ts): median and range of 7, ms. */
  nodeBootMs: { p50: number; min: number; max: number };
  /** Variables of this shell's environment that the benchmarks drop when they time a start (./service-env.ts). */
  droppedStartVariables: string[];
  /** `node -e 0` in this shell's environment as it is, when it has any of those: median of 7, ms. */
  nodeBootShellEnvMs?: number;
  /** Writing one byte per 4 KiB page of fresh 64 MiB blocks, ms per GiB (median of 4 blocks). */
  freshMemoryMsPerGiB: number;
  /** The same writes to a block already faulted in (the floor), ms per GiB. */
  reusedMemoryMsPerGiB: number;
  /** Minor page faults the fresh writes took, per 4 KiB page (1: every page faulted on its own). */
  faultsPerFreshPage: number;
  /** AES-256-GCM of 16 KiB pieces into a reused buffer, MB/s, one thread. */
  aesGcmMBps: number;
}

function median(v: number[]): number {
  return percentile(v, 50);
}

function nodeBoot(env: NodeJS.ProcessEnv): HostProfile['nodeBootMs'] {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore', env });
    times.push(performance.now() - t);
  }
  return { p50: +median(times).toFixed(1), min: +Math.min(...times).toFixed(1), max: +Math.max(...times).toFixed(1) };
}

function touch(b: Buffer): number {
  const t = performance.now();
  for (let i = 0; i < b.length; i += PAGE) b[i] = 1;
  return performance.now() - t;
}

function memory(): Pick<HostProfile, 'freshMemoryMsPerGiB' | 'reusedMemoryMsPerGiB' | 'faultsPerFreshPage'> {
  const perGiB = (ms: number) => (ms * (1 << 30)) / BLOCK;
  const fresh: number[] = [];
  let faults = 0;
  for (let i = 0; i < BLOCKS; i++) {
    const before = process.resourceUsage().minorPageFault;
    const block = Buffer.allocUnsafeSlow(BLOCK);
    fresh.push(perGiB(touch(block)));
    faults += process.resourceUsage().minorPageFault - before;
  }
  const kept = Buffer.allocUnsafeSlow(BLOCK);
  touch(kept);
  const reused = Array.from({ length: BLOCKS }, () => perGiB(touch(kept)));
  return {
    freshMemoryMsPerGiB: Math.round(median(fresh)),
    reusedMemoryMsPerGiB: +median(reused).toFixed(1),
    faultsPerFreshPage: +(faults / ((BLOCKS * BLOCK) / PAGE)).toFixed(2),
  };
}

function aesGcm(): number {
  const piece = crypto.randomBytes(16 << 10);
  const out = Buffer.alloc(piece.length + 16);
  const cipher = crypto.createCipheriv('aes-256-gcm', crypto.randomBytes(32), crypto.randomBytes(12));
  cipher.update(piece);  // warm-up
  let bytes = 0;
  const t = performance.now();
  while (performance.now() - t < 300) {
    for (let i = 0; i < 64; i++) {
      cipher.update(piece).copy(out);
      bytes += piece.length;
    }
  }
  return Math.round(bytes / ((performance.now() - t) / 1000) / 1e6);
}

function readCmdline(): string {
  try {
    return fs.readFileSync('/proc/cmdline', 'utf8');
  } catch {
    return '';
  }
}

/** Measures this host (about 2 s). */
function measureHost(): HostProfile {
  const dropped = droppedStartVariables();
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    node: process.version,
    kernel: os.release(),
    pvmGuest: /(^|\s)pvm[_.]/.test(readCmdline()),
    nodeBootMs: nodeBoot(serviceProcessEnv()),
    droppedStartVariables: dropped,
    ...(dropped.length ? { nodeBootShellEnvMs: nodeBoot(process.env).p50 } : {}),
    ...memory(),
    aesGcmMBps: aesGcm(),
  };
}

/**
 * The same, measured by this file run as a child process: the profile allocates and frees a few hundred MB,
 * which a benchmark's own memory figures must not inherit.
 */
export function measureHostInChild(): HostProfile {
  const out = execFileSync(process.execPath, [__filename], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const { bench: _bench, ...host } = JSON.parse(out.trim().split('\n').pop()!) as HostProfile & { bench: string };
  return host;
}

/** One line for a benchmark's log. */
export function describeHost(h: HostProfile): string {
  return `host: ${h.cpu} x ${h.cpus}, node ${h.node}, kernel ${h.kernel}${h.pvmGuest ? ' (PVM guest)' : ''}; node -e 0 ${h.nodeBootMs.p50} ms` +
    `${h.nodeBootShellEnvMs === undefined ? '' : ` (${h.nodeBootShellEnvMs} ms with this shell's ${h.droppedStartVariables.join(', ')})`}; ` +
    `fresh memory ${h.freshMemoryMsPerGiB} ms/GiB (${h.faultsPerFreshPage} faults a page), reused ${h.reusedMemoryMsPerGiB} ms/GiB; AES-GCM ${h.aesGcmMBps} MB/s`;
}

if (require.main === module) {
  const host = measureHost();
  console.log(describeHost(host));
  printJsonLine({ bench: 'host', ...host });
}
