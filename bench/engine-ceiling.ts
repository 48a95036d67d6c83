// npm run bench:engine-ceiling — how close the template networks' float32 convolutions already run to what
// ONNX Runtime's own kernels reach on this core, and what its int8 kernels could add: the bound on
// photo -> template that no rewrite of the float32 networks can pass here.
// In one process, one thread, interleaved rounds:
//   - each template network (models/manifest.json `template`) in float32 and, where it has one, its int8 form,
//     profiled by ONNX Runtime: per node the median kernel time over the runs (a preempted run does not
//     count), summed as the convolutions proper, the PRelu parts (the nodes the install's PRelu rewrites made,
//     named "…prelu…") and the rest; the float32 convolutions' multiply-adds (from the weights' and outputs'
//     shapes) over their time, GFLOP/s;
//   - a float32 GEMM (MatMul, M x K x N below) and the same GEMM as u8 x s8 (QuantizeLinear + MatMulInteger),
//     GFLOP/s and GOP/s: the float32 kernel's reach and the int8 kernel's on this core's instructions.
// Reports each network's conv GFLOP/s as a share of the GEMM's, the int8 GEMM's speed over the float32's,
// and the embedding time the networks' multiply-adds would take at the float32 GEMM's rate.
// BENCH_CEILING_RUNS (default 60) network runs per round, BENCH_CEILING_ROUNDS (default 3).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { templateNetworks } from '../src/engine/template-spec';
import { packageRoot } from '../src/package-root';
import { percentile, printJsonLine } from './common';

const RUNS = Math.max(10, Number(process.env.BENCH_CEILING_RUNS ?? 60));
const ROUNDS = Math.max(1, Number(process.env.BENCH_CEILING_ROUNDS ?? 3));
const WARMUP = 10;
// About a millisecond a run, so that the median of many runs escapes another process's time slices; the
// shape of the networks' larger pointwise convolutions (positions x input channels x output channels).
const GEMM = { m: 784, k: 256, n: 256 };
const GEMM_RUNS = 100;

// The ONNX model form of scripts/onnx-model.js (shared with the install-time rewrites).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const onnx = require(path.join(packageRoot(), 'scripts', 'onnx-model.js')) as {
  newModel(o: { name: string; producer: string; inputs: [string, number[]][]; outputs: [string, number[]][] }): { nodes: unknown[]; initializers: Map<string, unknown> };
  node(opType: string, inputs: string[], outputs: string[], attributes?: unknown[]): unknown;
  floatTensor(name: string, dims: number[], data: Float32Array): unknown;
  rawTensor(name: string, dims: number[], dataType: number, bytes: Buffer): unknown;
  intAttribute(name: string, value: number): unknown;
  serialiseModel(model: unknown): Buffer;
};
const UINT8 = 2, INT8 = 3, FLOAT = 1;

const round = (v: number, d = 2) => +v.toFixed(d);
const median = (v: number[]) => percentile(v, 50);

const sessionOptions = (extra: ort.InferenceSession.SessionOptions = {}): ort.InferenceSession.SessionOptions => ({
  intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', ...extra,
});

/** A deterministic pseudo-random fill (the values do not change a GEMM's time; denormals would, and none occur). */
function filled(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    a[i] = (s / 2 ** 32) * 2 - 1;
  }
  return a;
}

/** The float32 GEMM and the u8 x s8 GEMM of the same shape, as ONNX models (outputs float32). */
function gemmModels(): { float32: Buffer; int8: Buffer } {
  const { m, k, n } = GEMM;
  const f = onnx.newModel({ name: 'gemm-float32', producer: 'face-check bench', inputs: [['a', [m, k]]], outputs: [['y', [m, n]]] });
  f.initializers.set('b', onnx.floatTensor('b', [k, n], filled(k * n, 7)));
  f.nodes.push(onnx.node('MatMul', ['a', 'b'], ['y']));
  const q = onnx.newModel({ name: 'gemm-int8', producer: 'face-check bench', inputs: [['a', [m, k]]], outputs: [['y', [m, n]]] });
  const weights = Buffer.from(Int8Array.from(filled(k * n, 7), (v) => Math.round(v * 127)).buffer);
  q.initializers.set('b', onnx.rawTensor('b', [k, n], INT8, weights));
  q.initializers.set('scale', onnx.floatTensor('scale', [], Float32Array.of(1 / 127)));
  q.initializers.set('zero', onnx.rawTensor('zero', [], UINT8, Buffer.from([128])));
  q.nodes.push(onnx.node('QuantizeLinear', ['a', 'scale', 'zero'], ['a_q']));
  q.nodes.push(onnx.node('MatMulInteger', ['a_q', 'b', 'zero'], ['y_i']));
  q.nodes.push(onnx.node('Cast', ['y_i'], ['y'], [onnx.intAttribute('to', FLOAT)]));
  return { float32: onnx.serialiseModel(f), int8: onnx.serialiseModel(q) };
}

interface ProfileEvent { cat: string; name: string; dur: number; args: { op_name?: string; input_type_shape?: Array<Record<string, number[]>>; output_type_shape?: Array<Record<string, number[]>> } }

interface NodeSplit {
  /** Convolutions proper (Conv, QLinearConv) not made by the PRelu rewrites: medians summed, microseconds. */
  convUs: number;
  /** The PRelu rewrites' nodes. */
  preluUs: number;
  /** Everything else (additions, reorders, quantisation at the ends). */
  otherUs: number;
  /** Multiply-adds of the float32 convolutions proper (0 for an int8 form: not counted). */
  macs: number;
}

/** A profile's nodes as medians of their kernel times, split by kind, with the float32 convolutions' multiply-adds. */
function nodeSplit(events: ProfileEvent[]): NodeSplit {
  const byNode = new Map<string, { times: number[]; args: ProfileEvent['args'] }>();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const n = byNode.get(e.name) ?? { times: [], args: e.args };
    n.times.push(e.dur);
    byNode.set(e.name, n);
  }
  const split: NodeSplit = { convUs: 0, preluUs: 0, otherUs: 0, macs: 0 };
  for (const [name, { times, args }] of byNode) {
    const us = median(times);
    if (/prelu/i.test(name)) split.preluUs += us;
    else if (args.op_name === 'Conv' || args.op_name === 'QLinearConv') {
      split.convUs += us;
      if (args.op_name === 'Conv') {
        const w = Object.values(args.input_type_shape![1])[0];
        const out = Object.values(args.output_type_shape![0])[0];
        // Output positions x Cout x (Cin / groups) x kh x kw; a blocked (NCHWc) output holds the same values.
        split.macs += (out.reduce((a, b) => a * b, 1) / w[0]) * w.reduce((a, b) => a * b, 1);
      }
    } else split.otherUs += us;
  }
  return split;
}

async function profileNetwork(file: string, inputName: string, dims: number[], dir: string, round: number) {
  const session = await ort.InferenceSession.create(file, sessionOptions({
    graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: path.join(dir, `r${round}-${path.basename(file)}`),
  }));
  const x = new ort.Tensor('float32', filled(dims.reduce((a, b) => a * b, 1), 3), dims);
  const times: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const t0 = performance.now();
    await session.run({ [inputName]: x });
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  // endProfiling writes the file (onnxruntime-node returns no name): the newest file of this prefix.
  session.endProfiling();
  await session.release();
  const prefix = `r${round}-${path.basename(file)}`;
  const written = fs.readdirSync(dir).filter((f) => f.startsWith(prefix)).map((f) => path.join(dir, f));
  const events = JSON.parse(fs.readFileSync(written[written.length - 1], 'utf8')) as ProfileEvent[];
  return { runMs: median(times), ...nodeSplit(events) };
}

/** The GEMM node's own kernel time (the profile's median: no tensor copies, no other node), as GFLOP/s or GOP/s. */
async function gemmRate(model: Buffer, gemmNode: string, dir: string, tag: string): Promise<number> {
  const session = await ort.InferenceSession.create(model, sessionOptions({
    graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: path.join(dir, tag),
  }));
  const a = new ort.Tensor('float32', filled(GEMM.m * GEMM.k, 5), [GEMM.m, GEMM.k]);
  for (let i = 0; i < 10 + GEMM_RUNS; i++) await session.run({ a });
  session.endProfiling();
  await session.release();
  const file = fs.readdirSync(dir).filter((f) => f.startsWith(tag)).map((f) => path.join(dir, f)).pop()!;
  const events = JSON.parse(fs.readFileSync(file, 'utf8')) as ProfileEvent[];
  const times = events.filter((e) => e.cat === 'Node' && e.name === `${gemmNode}_kernel_time`).map((e) => e.dur);
  if (times.length === 0) throw new Error(`bench: no ${gemmNode} node in the GEMM's profile`);
  return (2 * GEMM.m * GEMM.k * GEMM.n) / (median(times) / 1e6) / 1e9;
}

async function main(): Promise<void> {
  const networks = templateNetworks(undefined, 'float32');
  const int8Files = new Map(templateNetworks(undefined, 'int8').filter((n, i) => n.file !== networks[i].file).map((n) => [n.id, n.file]));
  const modelDir = path.join(packageRoot(), 'models');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-ceiling-'));
  const gemm = gemmModels();
  type Profile = Awaited<ReturnType<typeof profileNetwork>>;
  const rows = new Map<string, Profile[]>();
  const rates = { float32: [] as number[], int8: [] as number[] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      rates.float32.push(await gemmRate(gemm.float32, 'y', dir, `r${r}-gemm-float32`));
      for (const n of networks) {
        const dims = [1, 3, n.input.height, n.input.width];
        rows.set(n.id, [...(rows.get(n.id) ?? []), await profileNetwork(path.join(modelDir, n.file), n.input.name, dims, dir, r)]);
        const int8 = int8Files.get(n.id);
        if (int8) rows.set(`${n.id}.int8`, [...(rows.get(`${n.id}.int8`) ?? []), await profileNetwork(path.join(modelDir, int8), n.input.name, dims, dir, r)]);
      }
      rates.int8.push(await gemmRate(gemm.int8, 'y_i', dir, `r${r}-gemm-int8`));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const float32Gemm = median(rates.float32), int8Gemm = median(rates.int8);
  console.log(`== ONNX Runtime ${ort.env.versions.common}, 1 thread, ${ROUNDS} interleaved rounds (medians) ==`);
  console.log(`GEMM ${GEMM.m}x${GEMM.k}x${GEMM.n}: float32 ${round(float32Gemm, 1)} GFLOP/s, u8 x s8 ${round(int8Gemm, 1)} GOP/s -> int8 ${round(int8Gemm / float32Gemm)}x the float32 kernel`);
  const report: Record<string, object> = {};
  let totalMacs = 0, totalRun = 0;
  const ms = (ps: Profile[], f: (p: Profile) => number) => median(ps.map(f)) / 1000;
  console.log(`${''.padEnd(20)}${'run'.padStart(9)}${'convolutions'.padStart(14)}${'PRelu parts'.padStart(13)}${'rest'.padStart(8)}  (ms; per-node medians summed)`);
  for (const id of rows.keys()) {
    const ps = rows.get(id)!;
    const split = { runMs: median(ps.map((p) => p.runMs)), convMs: ms(ps, (p) => p.convUs), preluMs: ms(ps, (p) => p.preluUs), otherMs: ms(ps, (p) => p.otherUs) };
    const macs = ps[0].macs;
    const entry: Record<string, number> = Object.fromEntries(Object.entries(split).map(([k, v]) => [k, round(v)]));
    let rate = '';
    if (!id.endsWith('.int8')) {
      const gflops = (2 * macs) / (split.convMs / 1000) / 1e9;
      totalMacs += macs;
      totalRun += split.runMs;
      Object.assign(entry, { macsM: round(macs / 1e6, 1), convGflops: round(gflops, 1), convOfFloat32Gemm: round(gflops / float32Gemm) });
      rate = `  ${(macs / 1e6).toFixed(0)}M multiply-adds at ${gflops.toFixed(1)} GFLOP/s = ${(100 * gflops / float32Gemm).toFixed(0)} % of the float32 GEMM`;
    }
    report[id] = entry;
    console.log(`${id.padEnd(20)}${split.runMs.toFixed(2).padStart(9)}${split.convMs.toFixed(2).padStart(14)}${split.preluMs.toFixed(2).padStart(13)}${split.otherMs.toFixed(2).padStart(8)}${rate}`);
  }
  const atGemm = (2 * totalMacs) / (float32Gemm * 1e9) * 1000;
  console.log(`both float32 networks: ${(totalMacs / 1e6).toFixed(0)}M multiply-adds, ${totalRun.toFixed(2)} ms a template; at the float32 GEMM's rate ` +
    `they would take ${atGemm.toFixed(2)} ms, at the int8 GEMM's ${(atGemm * float32Gemm / int8Gemm).toFixed(2)} ms`);
  printJsonLine({
    bench: 'engine-ceiling', cpus: os.cpus().length, cpu: os.cpus()[0]?.model, ort: ort.env.versions.common, rounds: ROUNDS, runs: RUNS,
    gemm: { shape: GEMM, float32Gflops: round(float32Gemm, 1), int8Gops: round(int8Gemm, 1), int8OverFloat32: round(int8Gemm / float32Gemm) },
    networks: report,
    both: { macsM: round(totalMacs / 1e6, 1), runMs: round(totalRun), atFloat32GemmMs: round(atGemm), atInt8GemmMs: round(atGemm * float32Gemm / int8Gemm) },
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
