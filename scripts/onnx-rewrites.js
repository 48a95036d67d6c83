'use strict';
// Graph rewrites applied to the downloaded models at install time (named per model in models/manifest.json).
// Each gives the same results (checked by bench:engine and test/engine/model-rewrites.test.ts) in less time on
// ONNX Runtime's CPU provider, whose fast x86 convolution path (NCHWc, blocks of 8 or 16 channels) does
// not take PRelu and stops at channel counts that are not a multiple of the block, and which slows down
// on denormal weights wherever the calling thread does not flush them.
const { parseModel, serialiseModel, node: makeNode, floatTensor, intAttribute } = require('./onnx-model');
const { quantiseInt8 } = require('./onnx-quantise');

const attribute = (node, name) => node.attributes.find((a) => a.name === name);
const group = (node) => Number(attribute(node, 'group')?.int ?? 1n);

/** Who reads each tensor: nodes, and `'graph output'` for the model's outputs. */
function consumersOf(model) {
  const consumers = new Map();
  const add = (name, reader) => {
    if (!consumers.has(name)) consumers.set(name, []);
    consumers.get(name).push(reader);
  };
  for (const node of model.nodes) for (const input of node.inputs) add(input, node);
  for (const name of model.outputNames) add(name, 'graph output');
  return consumers;
}

function channelsOf(model, node) {
  const weight = model.initializers.get(node.inputs[1]);
  return weight?.data ? weight.dims[0] : undefined;
}

function depthwiseScale(model, name, scales) {
  model.initializers.set(name, floatTensor(name, [scales.length, 1, 1, 1], Float32Array.from(scales)));
}

/**
 * PRelu(x, s) with per-channel s becomes relu(x) + s * -relu(-x), as three ops ONNX Runtime runs in its
 * blocked layout: Relu(x); a 1x1 depthwise Conv by -1 then Relu, giving relu(-x); a 1x1 depthwise Conv by
 * -s added to relu(x). Bit for bit the same as PRelu (each element is one exact negation and one rounded
 * product added to zero). ONNX Runtime's own PRelu costs about 3.7 ns per element here (broadcast path).
 */
function preluAsDepthwise(model) {
  const nodes = [];
  const replacedSlopes = new Set();
  let rewritten = 0;
  for (const node of model.nodes) {
    const slope = node.opType === 'PRelu' ? model.initializers.get(node.inputs[1]) : undefined;
    const channels = slope?.data?.length;
    const perChannel = slope?.data && slope.dims.length >= 1 && slope.dims[0] === channels
      && slope.dims.slice(1).every((d) => d === 1);
    if (!perChannel || channels < 2) { nodes.push(node); continue; }
    const [x] = node.inputs;
    const [y] = node.outputs;
    const p = `${y}__prelu`;
    depthwiseScale(model, `${p}_minus_one`, new Array(channels).fill(-1));
    depthwiseScale(model, `${p}_minus_slope`, Array.from(slope.data, (s) => -s));
    const op = (opType, inputs, output, suffix, attributes = []) => makeNode(opType, inputs, [output], attributes, `${p}_${suffix}`);
    const depthwise = [intAttribute('group', channels)];
    nodes.push(
      op('Relu', [x], `${p}_positive`, 'relu'),
      op('Conv', [x, `${p}_minus_one`], `${p}_negated`, 'negate', depthwise),
      op('Relu', [`${p}_negated`], `${p}_negative`, 'relu_negated'),
      op('Conv', [`${p}_negative`, `${p}_minus_slope`], `${p}_scaled`, 'scale', depthwise),
      op('Add', [`${p}_positive`, `${p}_scaled`], y, 'add'),
    );
    replacedSlopes.add(slope.name);
    rewritten++;
  }
  model.nodes = nodes;
  // the slopes live on as the -s filters; drop the originals unless something else reads them
  const stillRead = new Set(nodes.flatMap((n) => n.inputs));
  for (const name of replacedSlopes) if (!stillRead.has(name)) model.initializers.delete(name);
  return rewritten;
}

/**
 * Pads the hidden channels of every Conv -> (PRelu | depthwise Conv)* -> Conv chain to a multiple of
 * `multiple` with zero filters: the padded channels are zero all the way and the consuming Conv gets zero
 * weights for them, so the result is unchanged and the chain can run in the blocked layout. Only chains
 * whose intermediate tensors feed exactly one node (and are not graph outputs) are touched.
 */
function padHiddenChannels(model, multiple) {
  const consumers = consumersOf(model);
  let padded = 0;
  for (const head of model.nodes) {
    if (head.opType !== 'Conv' || group(head) !== 1) continue;
    const channels = channelsOf(model, head);
    if (!channels || channels % multiple === 0) continue;
    const chain = [];
    let tensor = head.outputs[0];
    let tail;
    for (;;) {
      const next = consumers.get(tensor) ?? [];
      if (next.length !== 1) break;
      const [node] = next;
      if (node.opType === 'PRelu' || (node.opType === 'Conv' && group(node) === channels && group(node) > 1)) {
        chain.push(node);
        tensor = node.outputs[0];
        continue;
      }
      if (node.opType === 'Conv' && group(node) === 1) tail = node;
      break;
    }
    if (!tail || !chainIsFloat(model, [head, ...chain, tail])) continue;
    const to = Math.ceil(channels / multiple) * multiple;
    padAxis(model, head.inputs[1], 0, to);
    if (head.inputs[2]) padAxis(model, head.inputs[2], 0, to);
    for (const node of chain) {
      padAxis(model, node.inputs[1], 0, to);
      if (node.inputs[2]) padAxis(model, node.inputs[2], 0, to);
      if (node.opType === 'Conv') node.attributes = node.attributes.map((a) => (a.name === 'group' ? intAttribute('group', to) : a));
    }
    padAxis(model, tail.inputs[1], 1, to);
    padded++;
  }
  if (padded) dropShapeHints(model);
  return padded;
}

function chainIsFloat(model, nodes) {
  return nodes.every((n) => n.inputs.slice(1).every((name) => model.initializers.get(name)?.data));
}

/** Zero-pads axis `axis` of an initializer to `size`, in place in the model. */
function padAxis(model, name, axis, size) {
  const t = model.initializers.get(name);
  const dims = t.dims.slice();
  const outer = dims.slice(0, axis).reduce((a, b) => a * b, 1);
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const from = dims[axis];
  dims[axis] = size;
  const data = new Float32Array(outer * size * inner);
  for (let o = 0; o < outer; o++) data.set(t.data.subarray(o * from * inner, (o + 1) * from * inner), o * size * inner);
  model.initializers.set(name, floatTensor(name, dims, data));
}

/** value_info entries (GraphProto field 13) are optional shape hints that padding would make wrong. */
function dropShapeHints(model) {
  model.otherGraphFields = model.otherGraphFields.filter((f) => f.field !== 13);
}

/** Smallest positive normal float32 (2^-126): anything nonzero below it is a denormal. */
const FLT_MIN = 1.1754943508222875e-38;

/**
 * Float weights below 2^-126 in magnitude become zero. Weight decay leaves such values in trained networks
 * (fr_feature: 8,938, fr_landmark: 26,567), and Intel cores take a slow microcode assist on every denormal
 * operand unless the thread flushes denormals. The engine's inference threads do (native/core/ort/float_mode.h:
 * DAZ reads these weights as zero already, so the rewrite changes nothing there); other runtimes given
 * these files, such as onnxruntime-node in bench:engine, cannot set that mode on the thread that runs a
 * single-threaded session. Returns the number of weights flushed.
 */
function flushDenormalWeights(model) {
  let flushed = 0;
  for (const [name, tensor] of model.initializers) {
    if (!tensor.data) continue;
    let copy;
    tensor.data.forEach((v, i) => {
      if (v === 0 || Math.abs(v) >= FLT_MIN) return;
      copy ??= Float32Array.from(tensor.data);
      copy[i] = 0;
      flushed++;
    });
    if (copy) model.initializers.set(name, floatTensor(name, tensor.dims, copy));
  }
  return flushed;
}

const REWRITES = {
  'flush-denormal-weights': flushDenormalWeights,
  'pad-hidden-channels-16': (model) => padHiddenChannels(model, 16),
  'prelu-as-depthwise': preluAsDepthwise,
};

/** Applies the named rewrites in order; returns the new model bytes and what each rewrite changed. */
function rewriteModel(bytes, names) {
  const model = parseModel(bytes);
  const changed = {};
  for (const name of names) {
    const rewrite = REWRITES[name];
    if (!rewrite) throw new Error(`unknown model rewrite ${name}`);
    changed[name] = rewrite(model);
  }
  return { bytes: serialiseModel(model), changed };
}

/** The int8 (QDQ) form of a float model (scripts/onnx-quantise.js) with its calibration table. */
function quantisedModel(bytes, table, options = {}) {
  const model = parseModel(bytes);
  quantiseInt8(model, table, options);
  return serialiseModel(model);
}

module.exports = { rewriteModel, quantisedModel, REWRITES };
