// The install-time model rewrites (scripts/onnx-rewrites.js) give the results of the published models:
// on small graphs built here (every case the rewrites look for, and the cases they must leave alone) and
// on the installed models against the published files, run with onnxruntime-node.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import t from 'tap';

import { samplePhotos } from '../helpers/sample-photos';

/* eslint-disable @typescript-eslint/no-require-imports */
const { rewriteModel } = require('../../scripts/onnx-rewrites');
const onnx = require('../../scripts/onnx-model');
const { extractPublishedModels } = require('../../scripts/fetch-assets');
const { sha256 } = require('../../scripts/npm-tarball');
/* eslint-enable @typescript-eslint/no-require-imports */

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));

type Attr = [string, number | number[]];
interface NodeSpec { op: string; inputs: string[]; output: string; attrs?: Attr[] }

/** A model from a node list, with the builders of scripts/onnx-model.js. */
function buildModel(nodes: NodeSpec[], weights: Map<string, { dims: number[]; data: Float32Array }>,
  input: [string, number[]], outputs: Array<[string, number[]]>): Buffer {
  const model = onnx.newModel({ name: 'test', producer: 'face-check test', inputs: [input], outputs });
  for (const n of nodes) {
    const attrs = (n.attrs ?? []).map(([name, v]) => (Array.isArray(v) ? onnx.intsAttribute(name, v) : onnx.intAttribute(name, v)));
    model.nodes.push(onnx.node(n.op, n.inputs, [n.output], attrs));
  }
  for (const [name, w] of weights) model.initializers.set(name, onnx.floatTensor(name, w.dims, w.data));
  return onnx.serialiseModel(model);
}

function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x / 4294967296; };
}

function randomTensor(dims: number[], rand: () => number, lo = -1, hi = 1): { dims: number[]; data: Float32Array } {
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = lo + (hi - lo) * rand();
  return { dims, data };
}

async function run(model: Buffer, input: Float32Array, dims: number[]): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all', intraOpNumThreads: 1, logSeverityLevel: 3 });
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', input, dims) });
  const result = session.outputNames.map((n) => out[n].data as Float32Array);
  await session.release();
  return result;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length && i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Conv 3->13 (3x3) -> PRelu -> depthwise 3x3 -> PRelu -> Conv 13->16 (1x1) -> PRelu, slopes beyond [0, 1]. */
function bottleneck(rand: () => number, extraOutput = false) {
  const w = new Map([
    ['w1', randomTensor([13, 3, 3, 3], rand)], ['b1', randomTensor([13], rand)], ['s1', randomTensor([13, 1, 1], rand, -1.5, 1.5)],
    ['w2', randomTensor([13, 1, 3, 3], rand)], ['b2', randomTensor([13], rand)], ['s2', randomTensor([13, 1, 1], rand, -1.5, 1.5)],
    ['w3', randomTensor([16, 13, 1, 1], rand)], ['b3', randomTensor([16], rand)], ['s3', randomTensor([16, 1, 1], rand, -1.5, 1.5)],
  ]);
  const nodes: NodeSpec[] = [
    { op: 'Conv', inputs: ['x', 'w1', 'b1'], output: 'c1', attrs: [['kernel_shape', [3, 3]], ['pads', [1, 1, 1, 1]]] },
    { op: 'PRelu', inputs: ['c1', 's1'], output: 'p1' },
    { op: 'Conv', inputs: ['p1', 'w2', 'b2'], output: 'c2', attrs: [['group', 13], ['kernel_shape', [3, 3]], ['pads', [1, 1, 1, 1]]] },
    { op: 'PRelu', inputs: ['c2', 's2'], output: 'p2' },
    { op: 'Conv', inputs: ['p2', 'w3', 'b3'], output: 'c3', attrs: [['kernel_shape', [1, 1]]] },
    { op: 'PRelu', inputs: ['c3', 's3'], output: 'y' },
  ];
  const outputs: Array<[string, number[]]> = [['y', [1, 16, 20, 20]]];
  if (extraOutput) outputs.push(['p1', [1, 13, 20, 20]]);
  return buildModel(nodes, w, ['x', [1, 3, 20, 20]], outputs);
}

t.test('PRelu as depthwise convolutions: bit for bit the same, for slopes below 0 and above 1', async (t) => {
  const rand = seeded(7);
  const model = bottleneck(rand);
  const { bytes, changed } = rewriteModel(model, ['prelu-as-depthwise']);
  t.same(changed, { 'prelu-as-depthwise': 3 });
  const input = randomTensor([1, 3, 20, 20], rand, -3, 3).data;
  const [a] = await run(model, input, [1, 3, 20, 20]);
  const [b] = await run(bytes, input, [1, 3, 20, 20]);
  t.equal(maxAbsDiff(a, b), 0, 'identical outputs');
  t.ok(a.some((v) => v < 0) && a.some((v) => v > 0), 'both signs reach the output (the test is not vacuous)');
  t.notOk(bytes.includes(Buffer.from('PRelu')), 'no PRelu left');
});

t.test('hidden channels padded to 16: same outputs, and the padded graph still rewrites', async (t) => {
  const rand = seeded(11);
  const model = bottleneck(rand);
  const { bytes, changed } = rewriteModel(model, ['pad-hidden-channels-16', 'prelu-as-depthwise']);
  t.same(changed, { 'pad-hidden-channels-16': 1, 'prelu-as-depthwise': 3 });
  const input = randomTensor([1, 3, 20, 20], rand, -3, 3).data;
  const [a] = await run(model, input, [1, 3, 20, 20]);
  const [b] = await run(bytes, input, [1, 3, 20, 20]);
  const scale = Math.max(...a.map(Math.abs));
  t.ok(maxAbsDiff(a, b) <= 1e-6 * scale, `max |diff| ${maxAbsDiff(a, b)} against outputs up to ${scale.toFixed(2)}`);
});

t.test('denormal weights flushed to zero: every other value kept, outputs unchanged', async (t) => {
  const FLT_MIN = 2 ** -126;
  const weights = randomTensor([4, 3, 1, 1], seeded(17));
  // denormals of both signs, the smallest normal float, zero
  weights.data.set([FLT_MIN / 4, -FLT_MIN / 2 ** 20, FLT_MIN, 0, -FLT_MIN * 3]);
  const bias = { dims: [4], data: Float32Array.from([2 ** -140, 0.5, -0.25, 1]) };
  const model = buildModel([{ op: 'Conv', inputs: ['x', 'w', 'b'], output: 'y', attrs: [['kernel_shape', [1, 1]]] }],
    new Map([['w', weights], ['b', bias]]), ['x', [1, 3, 5, 5]], [['y', [1, 4, 5, 5]]]);
  const { bytes, changed } = rewriteModel(model, ['flush-denormal-weights']);
  t.same(changed, { 'flush-denormal-weights': 3 });
  const after = onnx.parseModel(bytes).initializers;
  const expected = Float32Array.from(weights.data);
  expected[0] = 0;
  expected[1] = 0;
  t.same(Array.from(after.get('w').data), Array.from(expected), 'only the weight denormals became zero');
  t.same(Array.from(after.get('b').data), [0, 0.5, -0.25, 1], 'and the bias denormal');
  const input = randomTensor([1, 3, 5, 5], seeded(19), -3, 3).data;
  const [a] = await run(model, input, [1, 3, 5, 5]);
  const [b] = await run(bytes, input, [1, 3, 5, 5]);
  t.ok(maxAbsDiff(a, b) <= 1e-30, `max |diff| ${maxAbsDiff(a, b)}`);
  t.same(rewriteModel(bytes, ['flush-denormal-weights']).changed, { 'flush-denormal-weights': 0 }, 'nothing left to flush');
});

t.test('rewrites leave alone what they cannot prove equal', async (t) => {
  // the 13-channel tensor is also a graph output: padding it would change that output's shape
  const shared = bottleneck(seeded(3), true);
  t.same(rewriteModel(shared, ['pad-hidden-channels-16']).changed, { 'pad-hidden-channels-16': 0 });
  // a PRelu with one slope for all channels is not per-channel
  const rand = seeded(5);
  const single = buildModel([{ op: 'PRelu', inputs: ['x', 's'], output: 'y' }], new Map([['s', randomTensor([1], rand)]]),
    ['x', [1, 4, 3, 3]], [['y', [1, 4, 3, 3]]]);
  t.same(rewriteModel(single, ['prelu-as-depthwise']).changed, { 'prelu-as-depthwise': 0 });
  t.throws(() => rewriteModel(single, ['no-such-rewrite']), /unknown model rewrite/);
  t.throws(() => rewriteModel(Buffer.from([0x3a, 0x05, 0x01]), []), /truncated|not a model/);
});

t.test('the installed models are the published ones rewritten: pinned hashes, the same outputs', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-published-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  extractPublishedModels(dir);
  const photo = samplePhotos()[0];
  const rewritten = manifest.models.filter((m: { rewrites?: string[] }) => m.rewrites?.length);
  t.ok(rewritten.length >= 3, 'the embedding, landmark and liveness models are rewritten');
  for (const m of rewritten) {
    const installed = fs.readFileSync(path.join(root, 'models', m.file));
    t.equal(sha256(installed), m.rewritten_sha256, `${m.file}: installed file has the pinned sha256`);
    const published = fs.readFileSync(path.join(dir, m.file));
    t.equal(sha256(rewriteModel(published, m.rewrites).bytes), m.rewritten_sha256, `${m.file}: the rewrite is deterministic`);
    if (m.rewrites.includes('flush-denormal-weights')) {
      t.same(rewriteModel(installed, ['flush-denormal-weights']).changed, { 'flush-denormal-weights': 0 }, `${m.file}: no denormal weight left`);
      t.not(rewriteModel(published, ['flush-denormal-weights']).changed['flush-denormal-weights'], 0, `${m.file}: the published file had some`);
    }
    const [, channels, height, width] = m.input.shape as number[];
    // a real photo, resized to the model's input and normalised as the manifest says, and seeded noise
    const { data } = await sharp(photo).resize(width, height, { fit: 'cover' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const photoInput = new Float32Array(channels * height * width);
    for (let c = 0; c < channels; c++) {
      for (let i = 0; i < height * width; i++) photoInput[c * height * width + i] = (data[i * 3 + c] - m.input.mean[c]) / m.input.std[c];
    }
    const noise = randomTensor(m.input.shape, seeded(13), -1, 1).data;
    for (const [what, input] of [['photo', photoInput], ['noise', noise]] as const) {
      const a = await run(published, input, m.input.shape);
      const b = await run(installed, input, m.input.shape);
      const diff = Math.max(...a.map((x, k) => maxAbsDiff(x, b[k])));
      const scale = Math.max(...a.map((x) => Math.max(...x.map(Math.abs))));
      t.ok(diff <= 1e-5 * Math.max(1, scale), `${m.file} on ${what}: max |diff| ${diff.toExponential(2)} (outputs up to ${scale.toFixed(2)})`);
    }
  }
});
