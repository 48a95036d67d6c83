'use strict';
// Converts a float32 TensorFlow Lite convolutional network (NHWC) into an ONNX graph (NCHW, batch 1) that
// ONNX Runtime runs: used at install time for MobileFaceNet, which is published only as .tflite. Takes the
// operators such networks are made of (2-D convolution, depthwise convolution, elementwise add, sub, mul,
// abs, relu, and a final reshape that drops 1x1 spatial dimensions) and refuses anything else by name.
// tflite writes PReLU as relu(x) + c * (x - |x|); that pattern becomes one ONNX PRelu with slope 2c, the
// same values bit for bit (x - |x| is 2x exactly for x < 0, and 0 otherwise), so the install-time
// rewrites for PRelu apply to it as to every other model.
const { parseTflite, BUILTIN, CONV_OPTIONS, DEPTHWISE_OPTIONS, ADD_OPTIONS, PADDING_SAME, ACTIVATION, TENSOR_FLOAT32 } = require('./tflite-model');
const { newModel, node, floatTensor, intAttribute, intsAttribute, serialiseModel } = require('./onnx-model');

const NAMES = Object.fromEntries(Object.entries(BUILTIN).map(([k, v]) => [v, k]));

/** TF 'SAME' padding of one spatial axis: the odd pixel goes at the end. */
function samePadding(size, kernel, stride) {
  const total = Math.max((Math.ceil(size / stride) - 1) * stride + kernel - size, 0);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

function tfliteToOnnx(bytes, { name = 'converted' } = {}) {
  const g = parseTflite(bytes);
  const { tensors, operators } = g;
  if (g.inputs.length !== 1 || g.outputs.length !== 1) throw new Error('tflite: one input and one output expected');
  const input = tensors[g.inputs[0]], output = tensors[g.outputs[0]];
  if (input.shape.length !== 4 || output.shape.length !== 2) throw new Error('tflite: an NHWC image in, a vector out expected');
  // Every tensor is float32 but a reshape's target shape (int32, not read: the reshape is checked below).
  const shapeOperands = new Set(operators.filter((o) => o.builtin === BUILTIN.RESHAPE).map((o) => o.inputs[1]));
  tensors.forEach((t, i) => {
    if (t.type !== TENSOR_FLOAT32 && !shapeOperands.has(i)) throw new Error(`tflite: tensor ${t.name} is not float32`);
  });
  const [, height, width, channels] = input.shape;
  const model = newModel({
    name, producer: 'face-check tflite-to-onnx',
    inputs: [[input.name, [1, channels, height, width]]], outputs: [[output.name, [1, output.shape[1]]]],
  });
  const shapeOf = (i) => tensors[i].shape;  // NHWC (the batch dimension is taken as 1)
  const ref = (i) => (i === g.inputs[0] ? input.name : i === g.outputs[0] ? output.name : `t${i}`);
  const constant = (name, dims, data) => { model.initializers.set(name, floatTensor(name, dims, data)); return name; };
  const emit = (op, inputs, out, attributes = []) => model.nodes.push(node(op, inputs, [out], attributes));
  /** A constant operand of an elementwise op, laid out to broadcast against NCHW activations. */
  const operand = (i) => {
    const t = tensors[i];
    if (!t.data) return ref(i);
    if (t.data.length === 1) return constant(`t${i}`, [1], t.data);
    const c = t.shape[t.shape.length - 1];
    if (t.data.length !== c) throw new Error(`tflite: constant ${t.name} is not per-channel`);
    return constant(`t${i}`, [c, 1, 1], t.data);
  };
  /** Writes `op` into `out`, followed by a Relu when the tflite op fuses one. */
  const withActivation = (activation, out, write) => {
    if (activation === ACTIVATION.NONE) return write(out);
    if (activation !== ACTIVATION.RELU) throw new Error(`tflite: fused activation ${activation} not handled`);
    write(`${out}_linear`);
    emit('Relu', [`${out}_linear`], out);
  };

  const readers = new Map();
  operators.forEach((op, k) => op.inputs.forEach((i) => readers.set(i, [...(readers.get(i) ?? []), k])));
  const only = (tensor) => (readers.get(tensor)?.length === 1 && tensor !== g.outputs[0] ? operators[readers.get(tensor)[0]] : null);
  /** relu(x) + c*(x - |x|): the ops it spans and its per-channel slope 2c, or null. */
  function prelu(relu) {
    const x = relu.inputs[0];
    const siblings = (readers.get(x) ?? []).map((k) => operators[k]);
    const abs = siblings.find((o) => o.builtin === BUILTIN.ABS);
    const sub = siblings.find((o) => o.builtin === BUILTIN.SUB && o.inputs[0] === x && abs && o.inputs[1] === abs.outputs[0]);
    if (!abs || !sub || siblings.length !== 3 || only(abs.outputs[0]) !== sub) return null;
    const mul = only(sub.outputs[0]);
    const c = mul?.builtin === BUILTIN.MUL ? mul.inputs.find((i) => tensors[i].data) : undefined;
    const add = only(relu.outputs[0]);
    if (c === undefined || !add || add.builtin !== BUILTIN.ADD || add.options.uint8(ADD_OPTIONS.activation, 0) !== ACTIVATION.NONE
      || !add.inputs.includes(mul.outputs[0]) || only(mul.outputs[0]) !== add) return null;
    return { ops: [abs, sub, mul, add], slope: tensors[c].data.map((v) => 2 * v), output: add.outputs[0] };
  }

  const done = new Set();
  for (const op of operators) {
    if (done.has(op)) continue;
    const out = ref(op.outputs[0]);
    switch (op.builtin) {
      case BUILTIN.CONV_2D:
      case BUILTIN.DEPTHWISE_CONV_2D: {
        const depthwise = op.builtin === BUILTIN.DEPTHWISE_CONV_2D;
        const slots = depthwise ? DEPTHWISE_OPTIONS : CONV_OPTIONS;
        const [x, w, b] = op.inputs;
        const filter = tensors[w];
        if (!filter.data) throw new Error(`tflite: ${filter.name}: filters must be constant`);
        const [o, kh, kw, i] = filter.shape;  // conv: OHWI; depthwise: 1 H W (C*multiplier)
        const inChannels = shapeOf(x)[3];
        if (depthwise && (o !== 1 || i !== inChannels || op.options.int32(DEPTHWISE_OPTIONS.depthMultiplier, 1) !== 1)) {
          throw new Error('tflite: only depth multiplier 1 is handled');
        }
        const outChannels = depthwise ? i : o, perGroup = depthwise ? 1 : i;
        const weights = new Float32Array(outChannels * perGroup * kh * kw);
        for (let oc = 0; oc < outChannels; oc++) for (let ic = 0; ic < perGroup; ic++) {
          for (let y = 0; y < kh; y++) for (let xx = 0; xx < kw; xx++) {
            weights[((oc * perGroup + ic) * kh + y) * kw + xx] = depthwise
              ? filter.data[(y * kw + xx) * outChannels + oc] : filter.data[((oc * kh + y) * kw + xx) * i + ic];
          }
        }
        const strideH = op.options.int32(slots.strideH, 1), strideW = op.options.int32(slots.strideW, 1);
        let pads = [0, 0, 0, 0];
        if (op.options.uint8(slots.padding, PADDING_SAME) === PADDING_SAME) {
          const [top, bottom] = samePadding(shapeOf(x)[1], kh, strideH), [left, right] = samePadding(shapeOf(x)[2], kw, strideW);
          pads = [top, left, bottom, right];
        }
        const inputs = [ref(x), constant(`t${w}`, [outChannels, perGroup, kh, kw], weights)];
        if (b >= 0) inputs.push(constant(`t${b}`, [outChannels], tensors[b].data));
        withActivation(op.options.uint8(slots.activation, 0), out, (to) => emit('Conv', inputs, to, [
          intsAttribute('kernel_shape', [kh, kw]), intsAttribute('strides', [strideH, strideW]),
          intsAttribute('pads', pads), intAttribute('group', depthwise ? outChannels : 1)]));
        break;
      }
      case BUILTIN.RELU: {
        const p = prelu(op);
        if (p) {
          emit('PRelu', [ref(op.inputs[0]), constant(`${out}_slope`, [p.slope.length, 1, 1], p.slope)], ref(p.output));
          p.ops.forEach((o) => done.add(o));
        } else {
          emit('Relu', [ref(op.inputs[0])], out);
        }
        break;
      }
      case BUILTIN.ADD:
        withActivation(op.options.uint8(ADD_OPTIONS.activation, 0), out, (to) => emit('Add', op.inputs.map(operand), to));
        break;
      case BUILTIN.SUB:
      case BUILTIN.MUL:
        emit(op.builtin === BUILTIN.SUB ? 'Sub' : 'Mul', op.inputs.map(operand), out);
        break;
      case BUILTIN.ABS:
        emit('Abs', [ref(op.inputs[0])], out);
        break;
      case BUILTIN.RESHAPE: {
        const [, h, w] = shapeOf(op.inputs[0]);
        if (h !== 1 || w !== 1 || shapeOf(op.outputs[0]).length !== 2) throw new Error('tflite: only a reshape of 1x1 maps to a vector is handled');
        emit('Flatten', [ref(op.inputs[0])], out);
        break;
      }
      default:
        throw new Error(`tflite: operator ${NAMES[op.builtin] ?? `#${op.builtin}`} not handled`);
    }
  }
  return serialiseModel(model);
}

module.exports = { tfliteToOnnx };
