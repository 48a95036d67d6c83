// The int8 form of the template networks (scripts/onnx-quantise.js, models/manifest.json `int8`): the rewrite
// is deterministic and gives ONNX Runtime's QDQ form (int8 weights, QuantizeLinear/DequantizeLinear around
// activations), on a small graph built here and on the installed networks; int8 templates agree with
// float32 ones on real photos above a cosine bound and carry another model id; float32 is the default.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import t from 'tap';

import { createEngine } from '../../src/engine';
import { templateModelId, templateNetworks } from '../../src/engine/template-spec';
import { dot as cosine } from '../../src/matching/dot';
import { loadRgb } from '../helpers/images';
import { samplePhotos } from '../helpers/sample-photos';

/* eslint-disable @typescript-eslint/no-require-imports */
const onnx = require('../../scripts/onnx-model');
const { rewriteModel, quantisedModel } = require('../../scripts/onnx-rewrites');
const { sha256 } = require('../../scripts/npm-tarball');
/* eslint-enable @typescript-eslint/no-require-imports */

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));
const calibration = JSON.parse(fs.readFileSync(path.join(root, 'models', 'int8-calibration.json'), 'utf8'));

/** Lowest and mean cosine of an int8 template with the float32 one of the same face (docs/engine.md, int8
 *  template networks): well above what a wrong scale or a lost Relu gives (near 0), below what was measured. */
const MIN_TEMPLATE_COSINE = 0.95;
const MIN_MEAN_COSINE = 0.98;

function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x / 4294967296; };
}

const random = (n: number, rand: () => number, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => lo + (hi - lo) * rand());

/** Conv 3->16 3x3 -> PRelu -> depthwise 3x3 -> PRelu -> Conv 16->16 1x1 -> Add (residual) -> Conv 16->8 1x1. */
function smallNetwork(rand: () => number): Buffer {
  const model = onnx.newModel({ name: 'small', producer: 'face-check test', inputs: [['x', [1, 3, 12, 12]]], outputs: [['y', [1, 8, 12, 12]]] });
  const w = (name: string, dims: number[], lo = -0.5, hi = 0.5) =>
    model.initializers.set(name, onnx.floatTensor(name, dims, random(dims.reduce((a, b) => a * b, 1), rand, lo, hi)));
  w('w1', [16, 3, 3, 3]); w('b1', [16]); w('s1', [16, 1, 1], 0, 0.5);
  w('w2', [16, 1, 3, 3]); w('b2', [16]); w('s2', [16, 1, 1], 0, 0.5);
  w('w3', [16, 16, 1, 1]); w('b3', [16]); w('w4', [8, 16, 1, 1]); w('b4', [8]);
  const pads = onnx.intsAttribute('pads', [1, 1, 1, 1]);
  model.nodes.push(
    onnx.node('Conv', ['x', 'w1', 'b1'], ['c1'], [pads]), onnx.node('PRelu', ['c1', 's1'], ['p1']),
    onnx.node('Conv', ['p1', 'w2', 'b2'], ['c2'], [pads, onnx.intAttribute('group', 16)]), onnx.node('PRelu', ['c2', 's2'], ['p2']),
    onnx.node('Conv', ['p2', 'w3', 'b3'], ['c3']), onnx.node('Add', ['c3', 'p1'], ['a']),
    onnx.node('Conv', ['a', 'w4', 'b4'], ['y']),
  );
  // the float form the engine loads: PRelu as depthwise convolutions (the installed networks have it)
  return rewriteModel(onnx.serialiseModel(model), ['prelu-as-depthwise']).bytes;
}

async function run(bytes: Buffer, feeds: Record<string, Float32Array>, dims: number[]): Promise<Record<string, Float32Array>> {
  const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', intraOpNumThreads: 1, logSeverityLevel: 3 });
  const out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v, dims)])));
  await session.release();
  return Object.fromEntries(session.outputNames.map((n) => [n, out[n].data as Float32Array]));
}

const opTypes = (bytes: Buffer) => (onnx.parseModel(bytes).nodes as { opType: string }[]).map((n) => n.opType);

/** A min/max table of every activation of `bytes` on `inputs` (the calibration's form, made here). */
async function minMaxTable(bytes: Buffer, inputs: Float32Array[]): Promise<Record<string, { scale: number; zero_point: number }>> {
  const { prepareForInt8 } = require('../../scripts/onnx-quantise');  // eslint-disable-line @typescript-eslint/no-require-imports
  const model = onnx.parseModel(bytes);
  prepareForInt8(model);
  const names: string[] = ['x'];
  for (const n of model.nodes as { outputs: string[] }[]) for (const o of n.outputs) if (!model.outputNames.includes(o)) { onnx.addFloatOutput(model, o); names.push(o); }
  const lo = new Map<string, number>(), hi = new Map<string, number>();
  for (const x of inputs) {
    const out: Record<string, Float32Array> = { ...(await run(onnx.serialiseModel(model), { x }, [1, 3, 12, 12])), x };
    for (const n of names) {
      for (const v of out[n]) { lo.set(n, Math.min(lo.get(n) ?? 0, v)); hi.set(n, Math.max(hi.get(n) ?? 0, v)); }
    }
  }
  return Object.fromEntries(names.map((n) => {
    const scale = Math.fround((hi.get(n)! - lo.get(n)!) / 255 || 1);
    return [n, { scale, zero_point: Math.round(-lo.get(n)! / scale) }];
  }));
}

t.test('the int8 rewrite of a small network: same bytes twice, QDQ form, outputs near the float ones', async (t) => {
  const rand = seeded(7);
  const float = smallNetwork(rand);
  const inputs = Array.from({ length: 8 }, () => random(3 * 12 * 12, rand));
  const table = await minMaxTable(float, inputs);
  const int8 = quantisedModel(float, table);
  t.ok(Buffer.from(int8).equals(quantisedModel(float, table)), 'quantising twice gives the same bytes');
  const ops = opTypes(int8);
  t.equal(ops.filter((o) => o === 'Conv').length, opTypes(float).filter((o) => o === 'Conv').length, 'every Conv kept');
  t.ok(ops.includes('QuantizeLinear') && ops.includes('DequantizeLinear'), 'QuantizeLinear/DequantizeLinear pairs');
  t.notOk(ops.includes('Relu'), 'no Relu left between quantised nodes (each joined with its Conv)');
  const weights = [...onnx.parseModel(int8).initializers.values()]
    .filter((w: { name: string; dims: number[] }) => w.name.endsWith('_quantized') && w.dims.length === 4);
  // 4 Convs and 2 depthwise ones per PRelu; the last Conv, writing the graph's output, stays float
  t.equal(weights.length, 4 + 2 * 2 - 1, 'int8 weights for every Conv but the last');
  for (const x of inputs.slice(0, 3)) {
    const a = (await run(float, { x }, [1, 3, 12, 12])).y;
    const b = (await run(int8, { x }, [1, 3, 12, 12])).y;
    t.ok(cosine(a.map((v) => v / Math.hypot(...a)), b.map((v) => v / Math.hypot(...b))) > 0.99, 'int8 output near the float one');
  }
  t.throws(() => quantisedModel(float, { ...table, x: { scale: 0, zero_point: 0 } }), /scale 0/, 'a bad table entry is refused');
});

t.test('an opset-9 graph with Slice and Unsqueeze attributes is raised to opset 13 as the same function and quantises', async (t) => {
  // the detector and the liveness network are opset 9, where Slice and Unsqueeze take attributes that later
  // opsets take as inputs; the per-channel QDQ form needs opset 13
  const rand = seeded(11);
  const model = onnx.newModel({
    name: 'opset9', producer: 'face-check test', opset: 9, irVersion: 4,
    inputs: [['x', [1, 3, 12, 12]]], outputs: [['y', [1, 4, 12, 12]], ['u', [1, 1, 6, 12, 12]]],
  });
  const w = (name: string, dims: number[]) => model.initializers.set(name, onnx.floatTensor(name, dims, random(dims.reduce((a, b) => a * b, 1), rand)));
  w('w1', [8, 3, 1, 1]); w('b1', [8]); w('w2', [4, 6, 1, 1]); w('b2', [4]);
  const int64Max = BigInt('9223372036854775807');
  model.nodes.push(
    onnx.node('Conv', ['x', 'w1', 'b1'], ['c1']), onnx.node('Relu', ['c1'], ['r1']),
    onnx.node('Slice', ['r1'], ['s'], [onnx.intsAttribute('starts', [2]), onnx.intsAttribute('ends', [int64Max]), onnx.intsAttribute('axes', [1])]),
    onnx.node('Conv', ['s', 'w2', 'b2'], ['y']),
    onnx.node('Unsqueeze', ['s'], ['u'], [onnx.intsAttribute('axes', [0])]),
  );
  const opset9 = onnx.serialiseModel(model);
  const raised = onnx.parseModel(opset9);
  onnx.raiseOpset(raised, 13, 7);
  const inputs = Array.from({ length: 4 }, () => random(3 * 12 * 12, rand));
  for (const x of inputs.slice(0, 2)) {
    const [a, b] = [await run(opset9, { x }, [1, 3, 12, 12]), await run(onnx.serialiseModel(raised), { x }, [1, 3, 12, 12])];
    t.same([...b.y], [...a.y], 'the Conv after the Slice: the same values');
    t.same([...b.u], [...a.u], 'the Unsqueeze: the same values');
  }
  const int8 = quantisedModel(opset9, await minMaxTable(opset9, inputs));
  const a = (await run(opset9, { x: inputs[0] }, [1, 3, 12, 12])).y, b = (await run(int8, { x: inputs[0] }, [1, 3, 12, 12])).y;
  t.ok(cosine(a.map((v) => v / Math.hypot(...a)), b.map((v) => v / Math.hypot(...b))) > 0.99, 'its int8 form runs, near the float one');
});

t.test('the installed int8 networks are the float ones quantised with the committed table: pinned, deterministic, QDQ', async (t) => {
  const quantised = manifest.models.filter((m: { int8?: unknown }) => m.int8);
  t.ok(quantised.length >= 1, 'an embedding network has an int8 form');
  for (const m of quantised) {
    const float = fs.readFileSync(path.join(root, 'models', m.file));
    const options = { exclude: m.int8.exclude, weightMax: m.int8.weight_max };
    const once = quantisedModel(float, calibration.models[m.id], options);
    t.equal(sha256(once), m.int8.sha256, `${m.int8.file}: the rewrite gives the pinned sha256`);
    t.equal(sha256(quantisedModel(float, calibration.models[m.id], options)), sha256(once), `${m.int8.file}: same bytes twice`);
    t.equal(sha256(fs.readFileSync(path.join(root, 'models', m.int8.file))), m.int8.sha256, `${m.int8.file}: installed`);
    const ops = opTypes(once);
    t.ok(ops.filter((o) => o === 'DequantizeLinear').length > 100, `${m.int8.file}: QDQ nodes`);
  }
});

t.test('int8 templates agree with float32 ones on real photos, under another model id', async (t) => {
  const float32 = await createEngine({ precision: 'float32' });
  const int8 = await createEngine({ precision: 'int8' });
  t.teardown(() => Promise.all([float32.close(), int8.close()]));
  t.not(int8.modelId, float32.modelId, 'int8 templates carry their own model id');
  if (!process.env.FACE_CHECK_PRECISION) t.equal(templateModelId(), float32.modelId, 'the engine uses the float32 networks by default');
  t.equal(int8.modelId, templateModelId(templateNetworks(undefined, 'int8')));
  t.equal(int8.templateSize, float32.templateSize);
  let faces = 0, lowest = 1, sum = 0;
  for (const photo of samplePhotos()) {
    const image = await loadRgb(photo);
    const [a, b] = [await float32.analyze(image), await int8.analyze(image)];
    t.equal(b.length, a.length, `${path.basename(photo)}: same faces`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (!a[i].analyzed || !b[i].analyzed) continue;
      const c = cosine(a[i].embedding, b[i].embedding);
      lowest = Math.min(lowest, c);
      sum += c;
      faces++;
    }
  }
  t.ok(faces >= 10, `${faces} faces compared`);
  t.ok(lowest >= MIN_TEMPLATE_COSINE, `lowest template cosine int8 vs float32 ${lowest.toFixed(4)} >= ${MIN_TEMPLATE_COSINE}`);
  t.ok(sum / faces >= MIN_MEAN_COSINE, `mean template cosine int8 vs float32 ${(sum / faces).toFixed(4)} >= ${MIN_MEAN_COSINE}`);
});
