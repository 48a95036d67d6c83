// A second, independent embedding model for bench:fusion only (the engine does not load it): dlib's
// face recognition ResNet (Davis King, released into the public domain), as ported to TensorFlow.js by
// face-api.js (MIT) and shipped in @vladmandic/face-api@1.7.15 (model/face_recognition_model*: weights
// stored as uint8 with a scale and offset per tensor). This file rebuilds that network as an ONNX graph,
// aligns a face to dlib's 150x150 chip.
import fs from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../src/package-root';
import type { Point, RgbImage } from '../src/engine/types';
import { estimateSimilarity } from './baseline-pipeline';

export const SECOND_MODEL_PACKAGE = '@vladmandic/face-api@1.7.15';
const WEIGHT_ENTRIES = ['package/model/face_recognition_model-weights_manifest.json', 'package/model/face_recognition_model.bin'];
export const CHIP = 150;
/** Per-channel RGB means of face-api.js's FaceRecognitionNet; input = (pixel - mean) / 255. */
const MEAN_RGB = [122.782, 117.001, 104.298];

// The ONNX model form of scripts/onnx-model.js (shared with the install-time rewrites and their tests).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const onnx = require(path.join(packageRoot(), 'scripts', 'onnx-model.js')) as {
  newModel(o: { name: string; producer: string; inputs: [string, number[]][]; outputs: [string, number[]][] }): OnnxModel;
  node(opType: string, inputs: string[], outputs: string[], attributes?: unknown[]): unknown;
  floatTensor(name: string, dims: number[], data: Float32Array | BigInt64Array): unknown;
  intsAttribute(name: string, values: number[]): unknown;
  serialiseModel(model: OnnxModel): Buffer;
};
interface OnnxModel { nodes: unknown[]; initializers: Map<string, unknown> }
const intsAttr = onnx.intsAttribute;

interface Weight { shape: number[]; values: Float32Array }

/** The tfjs weights manifest + binary, de-quantised (value = q * scale + min for uint8 tensors). */
function readWeights(manifestFile: string, binFile: string): Map<string, Weight> {
  const groups = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as {
    weights: { name: string; shape: number[]; quantization?: { dtype: string; scale: number; min: number } }[];
  }[];
  const bin = fs.readFileSync(binFile);
  const weights = new Map<string, Weight>();
  let offset = 0;
  for (const spec of groups.flatMap((g) => g.weights)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    const q = spec.quantization;
    if (q) {
      if (q.dtype !== 'uint8') throw new Error(`${spec.name}: ${q.dtype} quantisation not handled`);
      for (let i = 0; i < n; i++) values[i] = bin[offset + i] * q.scale + q.min;
      offset += n;
    } else {
      for (let i = 0; i < n; i++) values[i] = bin.readFloatLE(offset + 4 * i);
      offset += 4 * n;
    }
    weights.set(spec.name, { shape: spec.shape, values });
  }
  if (offset !== bin.length) throw new Error(`weights file has ${bin.length} bytes, the manifest describes ${offset}`);
  return weights;
}

/** The network of face-api.js's FaceRecognitionNet as ONNX (opset 13): input [1,3,150,150], output [1,128]. */
function buildGraph(w: Map<string, Weight>): Buffer {
  const model = onnx.newModel({
    name: 'dlib_face_recognition_resnet_model_v1', producer: 'face-check bench',
    inputs: [['input', [1, 3, CHIP, CHIP]]], outputs: [['descriptor', [1, 128]]],
  });
  const tensor = (name: string, dims: number[], data: Float32Array | BigInt64Array) =>
    model.initializers.set(name, onnx.floatTensor(name, dims, data));
  const node = (op: string, inputs: string[], output: string, attrs: unknown[] = []) =>
    model.nodes.push(onnx.node(op, inputs, [output], attrs));
  let counter = 0;
  const fresh = (p: string) => `${p}_${counter++}`;
  const get = (name: string) => {
    const v = w.get(name);
    if (!v) throw new Error(`weight ${name} missing`);
    return v;
  };
  // Conv + bias + per-channel scale layer folded into one Conv; TF filters HWIO -> ONNX OIHW.
  function conv(x: string, p: string, stride: number, relu: boolean, same: boolean): string {
    const f = get(`${p}/conv/filters`), bias = get(`${p}/conv/bias`).values;
    const s = get(`${p}/scale/weights`).values, b = get(`${p}/scale/biases`).values;
    const [kh, kw, ci, co] = f.shape;
    const W = new Float32Array(co * ci * kh * kw);
    for (let y = 0; y < kh; y++) for (let x2 = 0; x2 < kw; x2++) for (let i = 0; i < ci; i++) for (let o = 0; o < co; o++) {
      W[((o * ci + i) * kh + y) * kw + x2] = f.values[((y * kw + x2) * ci + i) * co + o] * s[o];
    }
    const B = Float32Array.from({ length: co }, (_, o) => bias[o] * s[o] + b[o]);
    tensor(`${p}.W`, [co, ci, kh, kw], W);
    tensor(`${p}.B`, [co], B);
    const out = fresh(p);
    const pad = same ? (kh - 1) / 2 : 0;
    node('Conv', [x, `${p}.W`, `${p}.B`], out, [intsAttr('kernel_shape', [kh, kw]),
      intsAttr('strides', [stride, stride]), intsAttr('pads', [pad, pad, pad, pad])]);
    return relu ? op('Relu', [out]) : out;
  }
  function op(type: string, inputs: string[], attrs: unknown[] = []): string {
    const out = fresh(type);
    node(type, inputs, out, attrs);
    return out;
  }
  function pad(x: string, pads: number[]): string {
    const name = fresh('pads');
    tensor(name, [8], BigInt64Array.from(pads.map(BigInt)));
    return op('Pad', [x, name]);
  }
  const residual = (x: string, p: string) =>
    op('Relu', [op('Add', [conv(conv(x, `${p}/conv1`, 1, true, true), `${p}/conv2`, 1, false, true), x])]);
  // Stride-2 block: the shortcut is a 2x2 average pool, zero-padded in channels; when the 'valid' stride-2 conv
  // comes out one smaller than the pool, face-api.js pads it with a zero row and column at the end.
  function residualDown(x: string, p: string, size: number, channels: number) {
    let out = conv(conv(x, `${p}/conv1`, 2, true, false), `${p}/conv2`, 1, false, true);
    const convSize = Math.floor((size - 3) / 2) + 1, poolSize = Math.floor(size / 2);
    const outChannels = get(`${p}/conv2/conv/filters`).shape[3];
    let shortcut = op('AveragePool', [x], [intsAttr('kernel_shape', [2, 2]), intsAttr('strides', [2, 2])]);
    if (convSize !== poolSize) out = pad(out, [0, 0, 0, 0, 0, 0, poolSize - convSize, poolSize - convSize]);
    if (outChannels !== channels) shortcut = pad(shortcut, [0, 0, 0, 0, 0, outChannels - channels, 0, 0]);
    return { out: op('Relu', [op('Add', [shortcut, out])]), size: poolSize, channels: outChannels };
  }
  let x = op('MaxPool', [conv('input', 'conv32_down', 2, true, false)], [intsAttr('kernel_shape', [3, 3]), intsAttr('strides', [2, 2])]);
  let size = 35, channels = 32;  // 150 -> 72 (7x7 stride 2) -> 35 (3x3 max pool stride 2)
  for (const p of ['conv32_1', 'conv32_2', 'conv32_3']) x = residual(x, p);
  const stages: [string, string[]][] = [['conv64_down', ['conv64_1', 'conv64_2', 'conv64_3']],
    ['conv128_down', ['conv128_1', 'conv128_2']], ['conv256_down', ['conv256_1', 'conv256_2']], ['conv256_down_out', []]];
  for (const [down, rest] of stages) {
    const r = residualDown(x, down, size, channels);
    ({ size, channels } = r);
    x = r.out;
    for (const p of rest) x = residual(x, p);
  }
  const fc = get('fc');
  tensor('fc.W', fc.shape, fc.values);
  node('MatMul', [op('Flatten', [op('GlobalAveragePool', [x])]), 'fc.W'], 'descriptor');
  return onnx.serialiseModel(model);
}

/** Path of the converted model (bench/out), made from the npm tarball on first use. */
export function secondModelFile(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { packTarball, extractEntries, cacheDir } = require(path.join(packageRoot(), 'scripts', 'npm-tarball.js'));
  const out = path.join(packageRoot(), 'bench', 'out', 'dlib_face_recognition.onnx');
  if (fs.existsSync(out)) return out;
  const dir = path.join(cacheDir(), 'face-api-model');
  const [manifestFile, binFile] = extractEntries(packTarball(SECOND_MODEL_PACKAGE), WEIGHT_ENTRIES, dir) as string[];
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, buildGraph(readWeights(manifestFile, binFile)));
  return out;
}

// dlib's mean face (get_face_chip_details, dlib/image_transforms/interpolation.h, Boost licence): positions of
// the 68-point landmarks 17..67 in a unit square. dlib fits the similarity on points 27..54 and 60..64 (no
// eyebrows, no lower lip) and maps the unit square into the chip with `padding` on each side.
const MEAN_X = [0.000213256, 0.0752622, 0.18113, 0.29077, 0.393397, 0.586856, 0.689483, 0.799124, 0.904991, 0.98004,
  0.490127, 0.490127, 0.490127, 0.490127, 0.36688, 0.426036, 0.490127, 0.554217, 0.613373, 0.121737, 0.187122, 0.265825,
  0.334606, 0.260918, 0.182743, 0.645647, 0.714428, 0.793132, 0.858516, 0.79751, 0.719335, 0.254149, 0.340985, 0.428858,
  0.490127, 0.551395, 0.639268, 0.726104, 0.642159, 0.556721, 0.490127, 0.423532, 0.338094, 0.290379, 0.428096,
  0.490127, 0.552157, 0.689874, 0.553364, 0.490127, 0.42689];
const MEAN_Y = [0.106454, 0.038915, 0.0187482, 0.0344891, 0.0773906, 0.0773906, 0.0344891, 0.0187482, 0.038915, 0.106454,
  0.203352, 0.307009, 0.409805, 0.515625, 0.587326, 0.609345, 0.628106, 0.609345, 0.587326, 0.216423, 0.178758,
  0.179852, 0.231733, 0.245099, 0.244077, 0.231733, 0.179852, 0.178758, 0.216423, 0.244077, 0.245099, 0.780233,
  0.745405, 0.727388, 0.742578, 0.727388, 0.745405, 0.780233, 0.864805, 0.902192, 0.909281, 0.902192, 0.864805,
  0.784792, 0.778746, 0.785343, 0.778746, 0.784792, 0.824182, 0.831803, 0.824182];
const CHIP_PADDING = 0.25;  // dlib's face recognition example

/** The 150x150 dlib chip of a face with 68 landmarks, as the model's normalised NCHW input. */
export function dlibChip(image: RgbImage, landmarks: Point[]): Float32Array {
  const chipPts: [number, number][] = [], imagePts: [number, number][] = [];
  for (let i = 27; i < 68; i++) {
    if ((i >= 55 && i <= 59) || i >= 65) continue;
    const s = CHIP / (2 * CHIP_PADDING + 1);
    chipPts.push([(CHIP_PADDING + MEAN_X[i - 17]) * s, (CHIP_PADDING + MEAN_Y[i - 17]) * s]);
    imagePts.push([landmarks[i].x, landmarks[i].y]);
  }
  const m = estimateSimilarity(chipPts, imagePts);  // chip -> image
  const { data, width, height } = image;
  const px = (x: number, y: number, c: number) => (x < 0 || y < 0 || x >= width || y >= height ? 0 : data[(y * width + x) * 3 + c]);
  const out = new Float32Array(3 * CHIP * CHIP);
  for (let v = 0; v < CHIP; v++) for (let u = 0; u < CHIP; u++) {
    const X = m[0] * u + m[1] * v + m[2], Y = m[3] * u + m[4] * v + m[5];
    const x0 = Math.floor(X), y0 = Math.floor(Y), fx = X - x0, fy = Y - y0;
    for (let ch = 0; ch < 3; ch++) {
      const top = (1 - fx) * px(x0, y0, ch) + fx * px(x0 + 1, y0, ch);
      const bottom = (1 - fx) * px(x0, y0 + 1, ch) + fx * px(x0 + 1, y0 + 1, ch);
      out[ch * CHIP * CHIP + v * CHIP + u] = ((1 - fy) * top + fy * bottom - MEAN_RGB[ch]) / 255;
    }
  }
  return out;
}
