// npm run bench:contention — does the service keep its share of the CPU beside other busy processes (a
// kiosk's UI, another service)? One client sends identify requests one after another (a gate: one face at a
// time) to the service in its own process (bench/api-server.ts), in interleaved phases:
//   idle      nothing else runs;
//   busy      two CPU-bound processes (plain loops at the default niceness) run beside it;
//   lowered   as busy, with the threads that analyse set to niceness 10: what the service did before its
//             analyses ran at the process's own priority (threads found by the CPU they spent on a warm-up).
// Reported per phase: the service's CPU share (cores, all its threads, from /proc), each busy process's
// share, and identify p50/p99; then busy/idle ratios. With one request at a time the service needs about
// one core; beside two busy processes on two cores its fair share is 2/3 of a core.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import { packageRoot } from '../src/package-root';
import { percentile, printJsonLine } from './common';
import { faceCrops } from './face-crops';

const PERSONS = Number(process.env.BENCH_CONTENTION_PERSONS ?? 1000);
const SECONDS = Number(process.env.BENCH_CONTENTION_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_CONTENTION_ROUNDS ?? 2);
const BUSY_PROCESSES = 2;
const KEY = 'bench-api-key-0123456789abcdef';
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds a process (all threads) or one thread has used, from its stat file. */
function cpuSeconds(statFile: string): number {
  const stat = fs.readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime
}

function threadCpu(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try { out.set(Number(tid), cpuSeconds(`/proc/${pid}/task/${tid}/stat`)); } catch { /* ended */ }
  }
  return out;
}

function busyProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

interface Phase {
  phase: string;
  serviceCores: number;
  busyCores: number[];
  requests: number;
  p50: number;
  p99: number;
  failures: number;
}

async function identifyLoop(url: string, body: string, seconds: number): Promise<{ latencies: number[]; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { 'Api-Key': KEY, 'Content-Type': 'application/json' }, body });
    await res.arrayBuffer();
    if (res.status !== 200) failures++;
    latencies.push(performance.now() - t0);
  }
  return { latencies, failures };
}

async function runPhase(name: string, servicePid: number, url: string, body: string, busy: number): Promise<Phase> {
  const hogs = Array.from({ length: busy }, busyProcess);
  try {
    await new Promise((r) => setTimeout(r, 300)); // the busy processes are up and spinning
    const hogStart = hogs.map((h) => cpuSeconds(`/proc/${h.pid}/stat`));
    const cpuStart = cpuSeconds(`/proc/${servicePid}/stat`);
    const t0 = performance.now();
    const { latencies, failures } = await identifyLoop(url, body, SECONDS);
    const wall = (performance.now() - t0) / 1000;
    const serviceCores = (cpuSeconds(`/proc/${servicePid}/stat`) - cpuStart) / wall;
    const busyCores = hogs.map((h, i) => +((cpuSeconds(`/proc/${h.pid}/stat`) - hogStart[i]) / wall).toFixed(3));
    return {
      phase: name, serviceCores: +serviceCores.toFixed(3), busyCores, requests: latencies.length,
      p50: +percentile(latencies, 50).toFixed(1), p99: +percentile(latencies, 99).toFixed(1), failures,
    };
  } finally {
    for (const h of hogs) h.kill('SIGKILL');
  }
}

async function main() {
  if (process.platform !== 'linux') {
    printJsonLine({ bench: 'contention', skipped: 'reads /proc (Linux only)' });
    return;
  }
  const [jpeg] = await faceCrops(3, 1);
  const server = spawn(process.execPath, [path.join(packageRoot(), 'dist', 'bench', 'api-server.js'), String(PERSONS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ service: string }>((resolve, reject) => {
    readline.createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
    server.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const pid = server.pid!;
  try {
    const body = JSON.stringify({ faceImage: jpeg.toString('base64') });
    const enrol = await fetch(`${ready.service}/person/face/gate-user`, { method: 'POST', headers: { 'Api-Key': KEY, 'Content-Type': 'application/json' }, body });
    if (enrol.status !== 200) throw new Error(`enrolment failed: ${enrol.status} ${await enrol.text()}`);
    const url = `${ready.service}/person/recognize-face`;

    // Warm-up; the threads that spent CPU on it, but the event loop's, are the ones that analyse.
    const before = threadCpu(pid);
    await identifyLoop(url, body, 3);
    const after = threadCpu(pid);
    const workers = [...after].filter(([tid, cpu]) => tid !== pid && cpu - (before.get(tid) ?? 0) >= 0.02).map(([tid]) => tid);

    const phases: Phase[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      phases.push(await runPhase('idle', pid, url, body, 0));
      phases.push(await runPhase('busy', pid, url, body, BUSY_PROCESSES));
    }
    // Last: raising a thread's priority back needs privileges this run may not have.
    let lowered = 0;
    for (const tid of workers) {
      try { os.setPriority(tid, 10); lowered++; } catch { /* the thread ended */ }
    }
    if (lowered > 0) phases.push(await runPhase('lowered', pid, url, body, BUSY_PROCESSES));

    const mean = (name: string, of: (p: Phase) => number) => {
      const list = phases.filter((p) => p.phase === name);
      return list.length ? +(list.reduce((s, p) => s + of(p), 0) / list.length).toFixed(3) : undefined;
    };
    const hogMean = (p: Phase) => (p.busyCores.length ? p.busyCores.reduce((s, c) => s + c, 0) / p.busyCores.length : 0);
    const summary = Object.fromEntries(['idle', 'busy', 'lowered'].map((n) => [n, {
      serviceCores: mean(n, (p) => p.serviceCores), busyProcessCores: mean(n, hogMean),
      p50: mean(n, (p) => p.p50), p99: mean(n, (p) => p.p99),
    }]));
    const ratio = (a?: number, b?: number) => (a !== undefined && b ? +(a / b).toFixed(2) : undefined);
    const fairCores = Math.min(os.availableParallelism() / (1 + BUSY_PROCESSES), summary.idle.serviceCores ?? 1);
    // The load-independent measure: the service's CPU against one busy process's in the same phase (1 = an
    // equal share; other work on a shared machine lowers both alike).
    const ratios = {
      busyServiceOverBusyProcess: ratio(summary.busy.serviceCores, summary.busy.busyProcessCores),
      loweredServiceOverBusyProcess: ratio(summary.lowered.serviceCores, summary.lowered.busyProcessCores),
      busyShareOfFair: ratio(summary.busy.serviceCores, fairCores),
      busyP50OverIdle: ratio(summary.busy.p50, summary.idle.p50),
      busyP99OverIdle: ratio(summary.busy.p99, summary.idle.p99),
      loweredShareOfFair: ratio(summary.lowered.serviceCores, fairCores),
      loweredP50OverIdle: ratio(summary.lowered.p50, summary.idle.p50),
      loweredP99OverIdle: ratio(summary.lowered.p99, summary.idle.p99),
    };

    console.log(`\nidentify, one request at a time, ${SECONDS} s per phase, ${PERSONS + 1} persons, ${os.availableParallelism()} cores; ` +
      `busy = ${BUSY_PROCESSES} CPU-bound processes; lowered = busy with ${lowered} analysing threads at niceness 10`);
    console.log('phase      service cores   busy cores      requests   p50 ms   p99 ms');
    for (const p of phases) {
      console.log(`${p.phase.padEnd(10)} ${String(p.serviceCores).padStart(13)}   ${p.busyCores.join(' / ').padEnd(14)} ` +
        `${String(p.requests).padStart(9)} ${String(p.p50).padStart(8)} ${String(p.p99).padStart(8)}`);
    }
    console.log(`service CPU / one busy process's: busy ${ratios.busyServiceOverBusyProcess}, lowered ${ratios.loweredServiceOverBusyProcess}`);
    console.log(`fair share beside the busy processes: ${fairCores.toFixed(2)} cores; busy: ${ratios.busyShareOfFair}x of it, ` +
      `p50 ${ratios.busyP50OverIdle}x and p99 ${ratios.busyP99OverIdle}x idle's; lowered: ${ratios.loweredShareOfFair}x of it, ` +
      `p50 ${ratios.loweredP50OverIdle}x idle's`);
    printJsonLine({
      bench: 'contention', persons: PERSONS + 1, seconds: SECONDS, rounds: ROUNDS, cores: os.availableParallelism(),
      busyProcesses: BUSY_PROCESSES, loweredThreads: lowered, fairCores: +fairCores.toFixed(3), summary, ratios, phases,
    });
  } finally {
    server.kill('SIGTERM');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
