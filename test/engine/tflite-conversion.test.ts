// The install-time tflite -> ONNX conversion (scripts/tflite-to-onnx.js) gives the published MobileFaceNet's
// results: the converted graph, run by onnxruntime-node, against the tflite graph itself run by a plain
// NHWC interpreter written here (every operator the file uses, straight from the tflite semantics), on a
// face photo and on noise.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import t from 'tap';

import { samplePhotos } from '../helpers/sample-photos';

/* eslint-disable @typescript-eslint/no-require-imports */
const { parseTflite, BUILTIN, CONV_OPTIONS, DEPTHWISE_OPTIONS, ADD_OPTIONS, PADDING_SAME } = require('../../scripts/tflite-model');
const { tfliteToOnnx } = require('../../scripts/tflite-to-onnx');
const { parseModel } = require('../../scripts/onnx-model');
const { packTarball, extractEntries, sha256 } = require('../../scripts/npm-tarball');
/* eslint-enable @typescript-eslint/no-require-imports */

interface Tensor { shape: number[]; data: Float32Array | null; name: string }
interface Options { int32(slot: number, fallback: number): number; uint8(slot: number, fallback: number): number }
interface Operator { builtin: number; inputs: number[]; outputs: number[]; options: Options }

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'models', 'manifest.json'), 'utf8'));
const spec = manifest.models.find((m: { format?: string }) => m.format === 'tflite');

let published: Buffer | undefined;
/** The published .tflite file, from the npm tarball (extracted once per run). */
function publishedTflite(): Buffer {
  if (published) return published;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-tflite-'));
  try {
    const [file] = extractEntries(packTarball(spec.source), [spec.tarball_path], dir);
    return (published = fs.readFileSync(file));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the tflite graph on one NHWC image (batch 1), operator by operator. */
function referenceRun(bytes: Buffer, input: Float32Array): Float32Array {
  const g = parseTflite(bytes) as { tensors: Tensor[]; operators: Operator[]; inputs: number[]; outputs: number[] };
  const values = new Map<number, Float32Array>([[g.inputs[0], input]]);
  const value = (i: number) => values.get(i) ?? g.tensors[i].data!;
  const shape = (i: number) => g.tensors[i].shape.map((d, k) => (k === 0 ? 1 : d));
  for (const op of g.operators) {
    const outShape = shape(op.outputs[0]);
    let out = new Float32Array(outShape.reduce((a, b) => a * b, 1));
    const relu = (activation: number) => { if (activation === 1) out = out.map((v) => Math.max(v, 0)); };
    switch (op.builtin) {
      case BUILTIN.CONV_2D:
      case BUILTIN.DEPTHWISE_CONV_2D: {
        const depthwise = op.builtin === BUILTIN.DEPTHWISE_CONV_2D;
        const slots = depthwise ? DEPTHWISE_OPTIONS : CONV_OPTIONS;
        const [x, w, b] = op.inputs;
        const X = value(x), W = g.tensors[w].data!, B = b >= 0 ? g.tensors[b].data! : null;
        const [, H, Wd, C] = shape(x), [, Ho, Wo, Co] = outShape, [, kh, kw] = g.tensors[w].shape;
        const sh = op.options.int32(slots.strideH, 1), sw = op.options.int32(slots.strideW, 1);
        const same = op.options.uint8(slots.padding, PADDING_SAME) === PADDING_SAME;
        const top = same ? Math.floor(Math.max((Ho - 1) * sh + kh - H, 0) / 2) : 0;
        const left = same ? Math.floor(Math.max((Wo - 1) * sw + kw - Wd, 0) / 2) : 0;
        for (let y = 0; y < Ho; y++) for (let xx = 0; xx < Wo; xx++) for (let o = 0; o < Co; o++) {
          let s = B ? B[o] : 0;
          for (let ky = 0; ky < kh; ky++) {
            const iy = y * sh - top + ky;
            if (iy < 0 || iy >= H) continue;
            for (let kx = 0; kx < kw; kx++) {
              const ix = xx * sw - left + kx;
              if (ix < 0 || ix >= Wd) continue;
              if (depthwise) s += X[(iy * Wd + ix) * C + o] * W[(ky * kw + kx) * Co + o];
              else for (let c = 0; c < C; c++) s += X[(iy * Wd + ix) * C + c] * W[((o * kh + ky) * kw + kx) * C + c];
            }
          }
          out[(y * Wo + xx) * Co + o] = s;
        }
        relu(op.options.uint8(slots.activation, 0));
        break;
      }
      case BUILTIN.ADD: case BUILTIN.SUB: case BUILTIN.MUL: {
        const [a, b] = op.inputs.map(value);
        const at = (v: Float32Array, i: number) => v[v.length === out.length ? i : i % v.length];  // per-channel broadcast (NHWC)
        for (let i = 0; i < out.length; i++) {
          const p = at(a, i), q = at(b, i);
          out[i] = op.builtin === BUILTIN.ADD ? p + q : op.builtin === BUILTIN.SUB ? p - q : p * q;
        }
        if (op.builtin === BUILTIN.ADD) relu(op.options.uint8(ADD_OPTIONS.activation, 0));
        break;
      }
      case BUILTIN.RELU: out = value(op.inputs[0]).map((v) => Math.max(v, 0)); break;
      case BUILTIN.ABS: out = value(op.inputs[0]).map(Math.abs); break;
      case BUILTIN.RESHAPE: out = value(op.inputs[0]).slice(0, out.length); break;
      default: throw new Error(`reference: operator ${op.builtin}`);
    }
    values.set(op.outputs[0], out);
  }
  return values.get(g.outputs[0])!;
}

async function onnxRun(model: Buffer, nchw: Float32Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all', intraOpNumThreads: 1, logSeverityLevel: 3 });
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', nchw, [1, 3, 112, 112]) });
  await session.release();
  return out[session.outputNames[0]].data as Float32Array;
}

const toNchw = (nhwc: Float32Array) => {
  const out = new Float32Array(nhwc.length);
  for (let i = 0; i < 112 * 112; i++) for (let c = 0; c < 3; c++) out[c * 112 * 112 + i] = nhwc[i * 3 + c];
  return out;
};

t.test('the converted MobileFaceNet gives the tflite graph\'s embeddings', async (t) => {
  const tflite = publishedTflite();
  t.equal(sha256(tflite), spec.sha256, 'the published file has the manifest\'s sha256');
  const onnx = tfliteToOnnx(tflite, { name: spec.id });
  // A face photo as the engine normalises it for this network, and seeded noise.
  const { data } = await sharp(samplePhotos()[0]).resize(112, 112, { fit: 'cover' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const photo = Float32Array.from(data, (v, i) => (v - spec.input.mean[i % 3]) / spec.input.std[i % 3]);
  let seed = 7;
  const noise = Float32Array.from({ length: 112 * 112 * 3 }, () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 2 ** 31 - 1; });
  for (const [what, input] of [['photo', photo], ['noise', noise]] as const) {
    const expected = referenceRun(tflite, input);
    const got = await onnxRun(onnx, toNchw(input));
    t.equal(got.length, 192);
    let diff = 0, scale = 0;
    for (let i = 0; i < expected.length; i++) { diff = Math.max(diff, Math.abs(expected[i] - got[i])); scale = Math.max(scale, Math.abs(expected[i])); }
    t.ok(scale > 0.1, `${what}: the embedding is not degenerate (max |value| ${scale.toFixed(3)})`);
    t.ok(diff <= 1e-4 * Math.max(1, scale), `${what}: max |diff| ${diff.toExponential(2)} (values up to ${scale.toFixed(2)})`);
  }
});

t.test('tflite\'s PReLU pattern becomes one PRelu, and nothing of it is left', async (t) => {
  const tflite = parseTflite(publishedTflite()) as { operators: Operator[] };
  const abs = tflite.operators.filter((o) => o.builtin === BUILTIN.ABS).length;
  t.ok(abs > 0, `the published graph writes PReLU as relu + abs/sub/mul/add (${abs} times)`);
  const model = parseModel(tfliteToOnnx(publishedTflite()));
  const count = (op: string) => model.nodes.filter((n: { opType: string }) => n.opType === op).length;
  t.equal(count('PRelu'), abs, 'one PRelu per pattern');
  t.same([count('Abs'), count('Sub'), count('Mul')], [0, 0, 0], 'no leftover elementwise op');
  t.equal(count('Conv'), tflite.operators.filter((o) => o.builtin === BUILTIN.CONV_2D || o.builtin === BUILTIN.DEPTHWISE_CONV_2D).length);
});

t.test('the converter refuses what is not a tflite model', async (t) => {
  t.throws(() => tfliteToOnnx(Buffer.from('not a model at all')), /not a TFL3 flatbuffer/);
  t.throws(() => tfliteToOnnx(Buffer.alloc(4)), /not a TFL3 flatbuffer/);
});
