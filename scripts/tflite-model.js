'use strict';
// Just enough of the TensorFlow Lite flatbuffer format to read a float32 model's first subgraph: tensors
// (shape, type, name, constant data), operators (builtin code, inputs, outputs, options table) and the
// graph's inputs and outputs. Field slots are those of tensorflow/lite/schema/schema.fbs.

const MODEL = { operatorCodes: 1, subgraphs: 2, buffers: 4 };
const OPERATOR_CODE = { deprecatedBuiltinCode: 0, builtinCode: 3 };
const SUBGRAPH = { tensors: 0, inputs: 1, outputs: 2, operators: 3 };
const TENSOR = { shape: 0, type: 1, buffer: 2, name: 3 };
const OPERATOR = { opcodeIndex: 0, inputs: 1, outputs: 2, builtinOptions: 4 };
const BUFFER = { data: 0 };
const TENSOR_FLOAT32 = 0;

/** Reads flatbuffer tables: every accessor takes a table's absolute offset and a field slot. */
class Flatbuffer {
  constructor(bytes) {
    if (bytes.length < 8 || bytes.toString('latin1', 4, 8) !== 'TFL3') throw new Error('tflite: not a TFL3 flatbuffer');
    this.bytes = bytes;
  }

  root() { return this.bytes.readUInt32LE(0); }

  /** Absolute offset of a field's value, or 0 when the table does not have it (default value). */
  field(table, slot) {
    const vtable = table - this.bytes.readInt32LE(table);
    const entry = 4 + 2 * slot;
    if (entry >= this.bytes.readUInt16LE(vtable)) return 0;
    const offset = this.bytes.readUInt16LE(vtable + entry);
    return offset ? table + offset : 0;
  }

  table(table, slot) {
    const at = this.field(table, slot);
    return at ? at + this.bytes.readUInt32LE(at) : 0;
  }

  vector(table, slot) {
    const at = this.field(table, slot);
    if (!at) return { start: 0, length: 0 };
    const v = at + this.bytes.readUInt32LE(at);
    return { start: v + 4, length: this.bytes.readUInt32LE(v) };
  }

  tables(table, slot) {
    const { start, length } = this.vector(table, slot);
    return Array.from({ length }, (_, i) => start + 4 * i + this.bytes.readUInt32LE(start + 4 * i));
  }

  ints(table, slot) {
    const { start, length } = this.vector(table, slot);
    return Array.from({ length }, (_, i) => this.bytes.readInt32LE(start + 4 * i));
  }

  string(table, slot) {
    const { start, length } = this.vector(table, slot);
    return this.bytes.toString('utf8', start, start + length);
  }

  bytesOf(table, slot) {
    const { start, length } = this.vector(table, slot);
    return this.bytes.subarray(start, start + length);
  }

  int8(table, slot, fallback) { const at = this.field(table, slot); return at ? this.bytes.readInt8(at) : fallback; }
  uint8(table, slot, fallback) { const at = this.field(table, slot); return at ? this.bytes.readUInt8(at) : fallback; }
  int32(table, slot, fallback) { const at = this.field(table, slot); return at ? this.bytes.readInt32LE(at) : fallback; }
}

/**
 * The first subgraph of a .tflite model. Tensors: { shape, type, name, data } with `data` a Float32Array
 * copy for float32 constants and null otherwise. Operators: { builtin, inputs, outputs, options } with
 * `options` an accessor of the builtin options table: options.int32(slot, fallback), options.uint8(...).
 */
function parseTflite(bytes) {
  const fb = new Flatbuffer(bytes);
  const model = fb.root();
  // Codes above 127 live in builtin_code; older files only fill the deprecated byte.
  const builtins = fb.tables(model, MODEL.operatorCodes).map((code) =>
    Math.max(fb.int8(code, OPERATOR_CODE.deprecatedBuiltinCode, 0), fb.int32(code, OPERATOR_CODE.builtinCode, 0)));
  const buffers = fb.tables(model, MODEL.buffers).map((b) => fb.bytesOf(b, BUFFER.data));
  const subgraphs = fb.tables(model, MODEL.subgraphs);
  if (!subgraphs.length) throw new Error('tflite: no subgraph');
  const graph = subgraphs[0];
  const tensors = fb.tables(graph, SUBGRAPH.tensors).map((t) => {
    const type = fb.uint8(t, TENSOR.type, TENSOR_FLOAT32);
    const raw = buffers[fb.int32(t, TENSOR.buffer, 0)];
    const data = type === TENSOR_FLOAT32 && raw?.length
      ? new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)) : null;
    return { shape: fb.ints(t, TENSOR.shape), type, name: fb.string(t, TENSOR.name), data };
  });
  const operators = fb.tables(graph, SUBGRAPH.operators).map((op) => {
    const options = fb.table(op, OPERATOR.builtinOptions);
    return {
      builtin: builtins[fb.int32(op, OPERATOR.opcodeIndex, 0)],
      inputs: fb.ints(op, OPERATOR.inputs),
      outputs: fb.ints(op, OPERATOR.outputs),
      options: {
        int32: (slot, fallback) => (options ? fb.int32(options, slot, fallback) : fallback),
        uint8: (slot, fallback) => (options ? fb.uint8(options, slot, fallback) : fallback),
      },
    };
  });
  return { tensors, operators, inputs: fb.ints(graph, SUBGRAPH.inputs), outputs: fb.ints(graph, SUBGRAPH.outputs) };
}

/** Builtin operator codes (schema.fbs BuiltinOperator) of the operators the converter takes. */
const BUILTIN = { ADD: 0, CONV_2D: 3, DEPTHWISE_CONV_2D: 4, MUL: 18, RELU: 19, RESHAPE: 22, SUB: 41, ABS: 101 };
/** Option slots (Conv2DOptions, DepthwiseConv2DOptions, AddOptions) and enum values. */
const CONV_OPTIONS = { padding: 0, strideW: 1, strideH: 2, activation: 3 };
const DEPTHWISE_OPTIONS = { padding: 0, strideW: 1, strideH: 2, depthMultiplier: 3, activation: 4 };
const ADD_OPTIONS = { activation: 0 };
const PADDING_SAME = 0;
const ACTIVATION = { NONE: 0, RELU: 1 };

module.exports = { parseTflite, BUILTIN, CONV_OPTIONS, DEPTHWISE_OPTIONS, ADD_OPTIONS, PADDING_SAME, ACTIVATION, TENSOR_FLOAT32 };
