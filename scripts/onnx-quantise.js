'use strict';
// The int8 rewrite (models/manifest.json `int8`): a float model becomes ONNX Runtime's QDQ form, a
// QuantizeLinear/DequantizeLinear pair after every activation a Conv, Gemm, MatMul or Add reads, and
// per-channel symmetric int8 weights (int32 biases) for the Conv, Gemm and MatMul nodes whose input and output
// are both quantised. ONNX Runtime fuses each DequantizeLinear -> Conv -> QuantizeLinear group into one int8
// kernel (QLinearConv, and QLinearAdd for Add) at session load. Activation scales and zero points come from
// a calibration table made once on development photos (bench/int8-calibration.ts) and committed beside the
// manifest, so the rewrite needs no data and gives the same bytes on every machine.
const { node: makeNode, floatTensor, rawTensor, intAttribute, raiseOpset, DATA_TYPE } = require('./onnx-model');

const QUANTISED_OPS = new Set(['Conv', 'Gemm', 'MatMul', 'Add']);
const WEIGHTED_OPS = new Set(['Conv', 'Gemm', 'MatMul']);
/** Symmetric int8 weights use -127..127 (as ONNX Runtime's quantiser), so negation stays exact. */
const WEIGHT_MAX = 127;

/** Round half to even, as numpy's rint that ONNX Runtime's quantiser uses. */
function rint(v) {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function consumersOf(nodes) {
  const consumers = new Map();
  for (const n of nodes) {
    for (const input of n.inputs) {
      if (!consumers.has(input)) consumers.set(input, []);
      consumers.get(input).push(n);
    }
  }
  return consumers;
}

/**
 * Conv -> Relu with the Conv read by nothing else becomes one Conv writing the Relu's output, where that
 * output is quantised with zero point 0: quantising then clamps at zero as the Relu did. (Not a float
 * rewrite: without the quantisation it drops the Relu.)
 */
function fuseConvRelu(model, table, excluded) {
  const consumers = consumersOf(model.nodes);
  const outputs = new Set(model.outputNames);
  const dropped = new Set();
  for (const n of model.nodes) {
    if (n.opType !== 'Conv' || excluded.has(n.name) || outputs.has(n.outputs[0])) continue;
    const next = consumers.get(n.outputs[0]) ?? [];
    if (next.length !== 1 || next[0].opType !== 'Relu' || table[next[0].outputs[0]]?.zero_point !== 0) continue;
    // only where the Relu's output will be quantised (quantiseInt8's rule)
    const readers = consumers.get(next[0].outputs[0]) ?? [];
    if (outputs.has(next[0].outputs[0]) || !readers.some((r) => QUANTISED_OPS.has(r.opType) && !excluded.has(r.name))) continue;
    n.outputs = [next[0].outputs[0]];
    dropped.add(next[0]);
  }
  model.nodes = model.nodes.filter((n) => !dropped.has(n));
}

/**
 * PRelu in the form prelu-as-depthwise leaves (relu(x) + (-s) * relu(-x), scripts/onnx-rewrites.js) becomes
 * x + (1 - s) * relu(-x): the same function with one tensor fewer to quantise and no Relu left between
 * quantised nodes (relu(-x) is a Conv that fuseConvRelu joins with its Relu).
 */
function preluForInt8(model) {
  const byName = new Map(model.nodes.map((n) => [n.name, n]));
  const dropped = new Set();
  let rewritten = 0;
  for (const add of model.nodes) {
    if (add.opType !== 'Add' || !add.name.endsWith('__prelu_add')) continue;
    const p = add.name.slice(0, -'_add'.length);
    const relu = byName.get(`${p}_relu`), scale = byName.get(`${p}_scale`);
    const minusSlope = scale && model.initializers.get(scale.inputs[1]);
    if (!relu || !minusSlope?.data || add.inputs[0] !== relu.outputs[0] || add.inputs[1] !== scale.outputs[0]) continue;
    const name = `${p}_one_minus_slope`;
    model.initializers.set(name, floatTensor(name, minusSlope.dims, Float32Array.from(minusSlope.data, (v) => 1 + v)));
    scale.inputs = [scale.inputs[0], name, ...scale.inputs.slice(2)];
    add.inputs = [relu.inputs[0], add.inputs[1]];
    dropped.add(relu);
    rewritten++;
  }
  model.nodes = model.nodes.filter((n) => !dropped.has(n));
  const read = new Set(model.nodes.flatMap((n) => n.inputs));
  for (const name of [...model.initializers.keys()]) if (name.endsWith('__prelu_minus_slope') && !read.has(name)) model.initializers.delete(name);
  return rewritten;
}

const groupOf = (node) => Number(node.attributes.find((a) => a.name === 'group')?.int ?? 1n);

/**
 * Cross-layer equalisation (Nagel et al., "Data-free quantization through weight equalization", 2019):
 * for a Conv A whose every output channel c reaches a Conv B only through per-channel positively homogeneous
 * steps (Relu, PRelu in preluForInt8's form), output channel c of A is divided by s_c and B's input channel
 * c multiplied by it, s_c = sqrt(r_A / r_B) of the two channels' weight ranges. The same function (up to
 * float rounding), with the channels' ranges evened out, which per-tensor activation scales need.
 */
function equaliseChannels(model, passes = 2) {
  let pairs = 0;
  for (let pass = 0; pass < passes; pass++) {
    const consumers = consumersOf(model.nodes);
    const outputs = new Set(model.outputNames);
    const only = (t) => (outputs.has(t) ? [] : consumers.get(t) ?? []);
    for (const a of model.nodes) {
      const wa = a.opType === 'Conv' ? model.initializers.get(a.inputs[1]) : undefined;
      if (!wa?.data) continue;
      const channels = wa.dims[0];
      // walk the homogeneous steps from A's output to the one Conv that reads the result
      let t = a.outputs[0];
      let b;
      for (;;) {
        const readers = only(t);
        if (readers.length === 1 && readers[0].opType === 'Relu') { t = readers[0].outputs[0]; continue; }
        const add = readers.find((r) => r.opType === 'Add' && r.name.endsWith('__prelu_add'));
        const negate = readers.find((r) => r.opType === 'Conv' && r.name.endsWith('__prelu_negate'));
        if (readers.length === 2 && add && negate) { t = add.outputs[0]; continue; }
        if (readers.length === 1 && readers[0].opType === 'Conv' && readers[0].inputs[0] === t) b = readers[0];
        break;
      }
      const wb = b && model.initializers.get(b.inputs[1]);
      if (!wb?.data || b.name.endsWith('__prelu_negate')) continue;
      const depthwise = groupOf(b) === channels && wb.dims[1] === 1;
      if (!depthwise && (groupOf(b) !== 1 || wb.dims[1] !== channels)) continue;
      const innerA = wa.data.length / channels;
      const innerB = wb.data.length / wb.dims[0] / wb.dims[1];
      const rangeA = new Float64Array(channels), rangeB = new Float64Array(channels);
      wa.data.forEach((v, i) => { const c = Math.floor(i / innerA); rangeA[c] = Math.max(rangeA[c], Math.abs(v)); });
      wb.data.forEach((v, i) => {
        const c = depthwise ? Math.floor(i / innerB) : Math.floor(i / innerB) % channels;
        rangeB[c] = Math.max(rangeB[c], Math.abs(v));
      });
      const scale = Float64Array.from(rangeA, (r, c) => (r > 0 && rangeB[c] > 0 ? Math.sqrt(r / rangeB[c]) : 1));
      const newA = Float32Array.from(wa.data, (v, i) => v / scale[Math.floor(i / innerA)]);
      const newB = Float32Array.from(wb.data, (v, i) => v * scale[depthwise ? Math.floor(i / innerB) : Math.floor(i / innerB) % channels]);
      // renamed copies: a weight shared with another node stays as it was there
      const set = (node, index, tensor, data) => {
        const name = `${tensor.name}_equalised`;
        model.initializers.set(name, floatTensor(name, tensor.dims, data));
        node.inputs = node.inputs.map((x, i) => (i === index ? name : x));
      };
      set(a, 1, wa, newA);
      set(b, 1, wb, newB);
      const ba = a.inputs[2] && model.initializers.get(a.inputs[2]);
      if (ba?.data) set(a, 2, ba, Float32Array.from(ba.data, (v, c) => v / scale[c]));
      pairs++;
    }
    const read = new Set(model.nodes.flatMap((n) => n.inputs));
    for (const name of [...model.initializers.keys()]) if (!read.has(name)) model.initializers.delete(name);
  }
  return pairs;
}

/**
 * The float graph whose activations the calibration measures (bench/int8-calibration.ts) and the int8 form
 * quantises: PRelu as preluForInt8 has it, channels equalised. The same function up to float rounding.
 */
function prepareForInt8(model) {
  preluForInt8(model);
  equaliseChannels(model);
}

/** The weight's output-channel axis: Conv [M, C/g, kH, kW] 0; Gemm 0 with transB, else 1; MatMul 1. */
function channelAxis(node) {
  if (node.opType === 'Conv') return 0;
  if (node.opType === 'Gemm') return Number(node.attributes.find((a) => a.name === 'transB')?.int ?? 0n) ? 0 : 1;
  return 1;
}

/** Per-channel symmetric int8 of a float weight along `axis`: { q (Int8Array), scales (Float32Array) }. */
function quantiseWeight(tensor, axis, weightMax) {
  const { dims, data } = tensor;
  const channels = dims[axis];
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const channelOf = (i) => Math.floor(i / inner) % channels;
  const max = new Float64Array(channels);
  data.forEach((v, i) => { const c = channelOf(i); max[c] = Math.max(max[c], Math.abs(v)); });
  const scales = Float32Array.from(max, (m) => (m > 0 ? m / weightMax : 1));
  const q = new Int8Array(data.length);
  data.forEach((v, i) => { q[i] = Math.max(-weightMax, Math.min(weightMax, rint(v / scales[channelOf(i)]))); });
  return { q, scales };
}

/**
 * Rewrites `model` in place to QDQ with the activation table `{ tensor: { scale, zero_point } }` (uint8
 * zero points). `exclude`: node names left in float32 (their inputs are still quantised where another
 * node reads them). `weightMax`: the largest weight magnitude in int8 steps (127; 63 keeps every pair of
 * uint8 x int8 products within int16, which x86 cores without VNNI saturate at). Returns the number of
 * weighted nodes made int8.
 */
function quantiseInt8(model, table, { exclude = [], weightMax = WEIGHT_MAX } = {}) {
  raiseOpset(model, 13, 7);
  prepareForInt8(model);
  const excluded = new Set(exclude);
  fuseConvRelu(model, table, excluded);
  const graphOutputs = new Set(model.outputNames);
  const consumers = consumersOf(model.nodes);
  const produced = new Set(model.nodes.flatMap((n) => n.outputs));
  const isActivation = (name) => !model.initializers.has(name) && name !== '';
  // A tensor is quantised where the table has it, some quantisable node reads it and it is not an output.
  const quantised = new Set();
  for (const [name, readers] of consumers) {
    if (!isActivation(name) || graphOutputs.has(name) || !table[name]) continue;
    if (readers.some((r) => QUANTISED_OPS.has(r.opType) && !excluded.has(r.name))) quantised.add(name);
  }
  const dq = (name) => (quantised.has(name) ? `${name}_dequantized` : name);
  const qdqPair = (name) => {
    const { scale, zero_point: zeroPoint } = table[name];
    if (!(scale > 0) || !Number.isInteger(zeroPoint) || zeroPoint < 0 || zeroPoint > 255) {
      throw new Error(`int8 calibration: tensor ${name} has scale ${scale} / zero point ${zeroPoint}`);
    }
    model.initializers.set(`${name}_scale`, floatTensor(`${name}_scale`, [], Float32Array.of(scale)));
    model.initializers.set(`${name}_zero_point`, rawTensor(`${name}_zero_point`, [], DATA_TYPE.uint8, Uint8Array.of(zeroPoint)));
    const params = [`${name}_scale`, `${name}_zero_point`];
    return [
      makeNode('QuantizeLinear', [name, ...params], [`${name}_quantized`], [], `${name}_QuantizeLinear`),
      makeNode('DequantizeLinear', [`${name}_quantized`, ...params], [`${name}_dequantized`], [], `${name}_DequantizeLinear`),
    ];
  };
  const nodes = [];
  // graph inputs a quantised node reads
  for (const name of quantised) if (!produced.has(name)) nodes.push(...qdqPair(name));
  let weighted = 0;
  for (const n of model.nodes) {
    const [x, w, b] = n.inputs;
    const weight = WEIGHTED_OPS.has(n.opType) ? model.initializers.get(w) : undefined;
    if (weight?.data && !excluded.has(n.name) && quantised.has(x) && quantised.has(n.outputs[0])) {
      const axis = channelAxis(n);
      const { q, scales } = quantiseWeight(weight, axis, weightMax);
      const channels = scales.length;
      const wq = `${w}_${n.name}_quantized`;
      model.initializers.set(wq, rawTensor(wq, weight.dims, DATA_TYPE.int8, q));
      model.initializers.set(`${wq}_scale`, floatTensor(`${wq}_scale`, [channels], scales));
      model.initializers.set(`${wq}_zero_point`, rawTensor(`${wq}_zero_point`, [channels], DATA_TYPE.int8, new Int8Array(channels)));
      nodes.push(makeNode('DequantizeLinear', [wq, `${wq}_scale`, `${wq}_zero_point`], [`${wq}_dequantized`],
        [intAttribute('axis', axis)], `${wq}_DequantizeLinear`));
      const inputs = [dq(x), `${wq}_dequantized`];
      const bias = b ? model.initializers.get(b) : undefined;
      if (bias?.data && (n.opType === 'Conv' || n.opType === 'Gemm') && bias.data.length === channels) {
        // int32 bias on the accumulator's scale (input scale x weight scale), as the int8 kernels add it
        const inputScale = table[x].scale;
        const biasScales = Float32Array.from(scales, (s) => inputScale * s);
        const bq = Int32Array.from(bias.data, (v, c) => Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, rint(v / biasScales[c]))));
        const bName = `${b}_${n.name}_quantized`;
        model.initializers.set(bName, rawTensor(bName, bias.dims, DATA_TYPE.int32, bq));
        model.initializers.set(`${bName}_scale`, floatTensor(`${bName}_scale`, [channels], biasScales));
        model.initializers.set(`${bName}_zero_point`, rawTensor(`${bName}_zero_point`, [channels], DATA_TYPE.int32, new Int32Array(channels)));
        nodes.push(makeNode('DequantizeLinear', [bName, `${bName}_scale`, `${bName}_zero_point`], [`${bName}_dequantized`],
          [intAttribute('axis', 0)], `${bName}_DequantizeLinear`));
        inputs.push(`${bName}_dequantized`);
      } else if (b) inputs.push(b);
      nodes.push({ ...n, inputs: [...inputs, ...n.inputs.slice(3)] });
      weighted++;
    } else {
      nodes.push({ ...n, inputs: n.inputs.map(dq) });
    }
    for (const out of n.outputs) if (quantised.has(out)) nodes.push(...qdqPair(out));
  }
  model.nodes = nodes;
  // float weights and biases now read only through their int8 copies
  const read = new Set(nodes.flatMap((n) => n.inputs));
  for (const name of [...model.initializers.keys()]) if (!read.has(name)) model.initializers.delete(name);
  return weighted;
}

module.exports = { quantiseInt8, prepareForInt8 };
