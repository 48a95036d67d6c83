'use strict';
// Just enough of the ONNX protobuf format to rewrite a model's graph at install time (onnx-rewrites.js) and
// to build small ones (tests, bench/second-model.ts): nodes and initializers become editable objects, every
// other field is carried over byte for byte.
// Field numbers are those of onnx.proto (ModelProto.graph = 7, GraphProto.node = 1, initializer = 5, ...).

const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_OUTPUT = 12;
const NODE = { input: 1, output: 2, name: 3, opType: 4, attribute: 5 };
const ATTRIBUTE = { name: 1, i: 3, ints: 8, type: 20 };
const ATTRIBUTE_TYPE = { int: 2, ints: 7 };
const TENSOR = { dims: 1, dataType: 2, floatData: 4, name: 8, rawData: 9 };
const TENSOR_FLOAT = 1;
const TENSOR_INT64 = 7;
const MODEL = { irVersion: 1, producerName: 2, opsetImport: 8 };
const GRAPH_NAME = 2;
const GRAPH_INPUT = 11;

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('onnx: truncated varint');
    const byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return [value, pos];
    shift += 7n;
  }
}

/** The top-level fields of one protobuf message, in order, each with its raw bytes. */
function readFields(buf) {
  const fields = [];
  let pos = 0;
  while (pos < buf.length) {
    const start = pos;
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value;
    if (wire === 0) [value, pos] = readVarint(buf, pos);
    else if (wire === 2) {
      let length;
      [length, pos] = readVarint(buf, pos);
      value = buf.subarray(pos, pos + Number(length));
      pos += Number(length);
    } else if (wire === 5) { value = buf.subarray(pos, pos + 4); pos += 4; }
    else if (wire === 1) { value = buf.subarray(pos, pos + 8); pos += 8; }
    else throw new Error(`onnx: unsupported wire type ${wire}`);
    if (pos > buf.length) throw new Error('onnx: truncated field');
    fields.push({ field, wire, value, raw: buf.subarray(start, pos) });
  }
  return fields;
}

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));  // negative int64 values take ten bytes, as protobuf says
  const bytes = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    bytes.push(byte);
  } while (v);
  return Buffer.from(bytes);
}

const key = (field, wire) => varint((field << 3) | wire);
const intField = (field, value) => Buffer.concat([key(field, 0), varint(value)]);
const bytesField = (field, bytes) => Buffer.concat([key(field, 2), varint(bytes.length), bytes]);
const stringField = (field, text) => bytesField(field, Buffer.from(text, 'utf8'));
const text = (bytes) => Buffer.from(bytes).toString('utf8');

/** Repeated int64 that a writer may have packed (wire type 2) or not. */
function int64s(fields, field) {
  const out = [];
  for (const f of fields) {
    if (f.field !== field) continue;
    if (f.wire === 0) out.push(Number(f.value));
    else for (let pos = 0; pos < f.value.length;) { let v; [v, pos] = readVarint(f.value, pos); out.push(Number(v)); }
  }
  return out;
}

function readAttribute(raw) {
  const fields = readFields(raw);
  const name = text(fields.find((f) => f.field === ATTRIBUTE.name).value);
  const i = fields.find((f) => f.field === ATTRIBUTE.i);
  return { name, int: i === undefined ? undefined : BigInt.asIntN(64, i.value), raw: Buffer.from(raw) };
}

function readNode(raw) {
  const fields = readFields(raw);
  const strings = (field) => fields.filter((f) => f.field === field).map((f) => text(f.value));
  const known = new Set(Object.values(NODE));
  return {
    opType: strings(NODE.opType)[0],
    name: strings(NODE.name)[0] ?? '',
    inputs: strings(NODE.input),
    outputs: strings(NODE.output),
    attributes: fields.filter((f) => f.field === NODE.attribute).map((f) => readAttribute(f.value)),
    // domain, doc_string and anything newer stay as they were
    rest: fields.filter((f) => !known.has(f.field)).map((f) => Buffer.from(f.raw)),
  };
}

function writeNode(node) {
  return Buffer.concat([
    ...node.inputs.map((name) => stringField(NODE.input, name)),
    ...node.outputs.map((name) => stringField(NODE.output, name)),
    stringField(NODE.name, node.name),
    stringField(NODE.opType, node.opType),
    ...node.attributes.map((a) => bytesField(NODE.attribute, a.raw)),
    ...node.rest,
  ]);
}

/** An INT attribute (AttributeProto with name, i and type INT). */
function intAttribute(name, value) {
  const raw = Buffer.concat([stringField(ATTRIBUTE.name, name), intField(ATTRIBUTE.i, value),
    intField(ATTRIBUTE.type, ATTRIBUTE_TYPE.int)]);
  return { name, int: BigInt(value), raw };
}

/** An INTS attribute (kernel_shape, pads, strides, ...). */
function intsAttribute(name, values) {
  const raw = Buffer.concat([stringField(ATTRIBUTE.name, name), ...values.map((v) => intField(ATTRIBUTE.ints, v)),
    intField(ATTRIBUTE.type, ATTRIBUTE_TYPE.ints)]);
  return { name, int: undefined, raw };
}

/** A node in the form parseModel gives (named after its output when no name is given). */
function node(opType, inputs, outputs, attributes = [], name = outputs[0]) {
  return { opType, name, inputs, outputs, attributes, rest: [] };
}

/** Float initializers are decoded to { dims, data }; other types stay raw and cannot be edited. */
function readInitializer(raw) {
  const fields = readFields(raw);
  const name = text(fields.find((f) => f.field === TENSOR.name).value);
  const dataType = Number(fields.find((f) => f.field === TENSOR.dataType)?.value ?? 0);
  const dims = int64s(fields, TENSOR.dims);
  const tensor = { name, dims, raw: Buffer.from(raw), data: undefined };
  if (dataType !== TENSOR_FLOAT || fields.some((f) => f.field === 13 /* external_data */)) return tensor;
  const rawData = fields.find((f) => f.field === TENSOR.rawData);
  if (rawData) {
    const copy = Buffer.from(rawData.value);
    tensor.data = new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
  } else {
    const values = [];
    for (const f of fields.filter((x) => x.field === TENSOR.floatData)) {
      if (f.wire === 5) values.push(Buffer.from(f.value).readFloatLE(0));
      else for (let p = 0; p < f.value.length; p += 4) values.push(Buffer.from(f.value).readFloatLE(p));
    }
    tensor.data = Float32Array.from(values);
  }
  return tensor;
}

/** An initializer of float32 (Float32Array) or int64 (BigInt64Array) values, stored as raw little-endian data. */
function floatTensor(name, dims, data) {
  if (data.length !== dims.reduce((a, b) => a * b, 1)) throw new Error(`onnx: ${name}: data does not fit ${dims}`);
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const type = data instanceof BigInt64Array ? TENSOR_INT64 : TENSOR_FLOAT;
  const raw = Buffer.concat([...dims.map((d) => intField(TENSOR.dims, d)), intField(TENSOR.dataType, type),
    stringField(TENSOR.name, name), bytesField(TENSOR.rawData, bytes)]);
  return { name, dims, data: type === TENSOR_FLOAT ? data : undefined, raw };
}

/** An initializer of any element type (onnx.proto TensorProto.DataType) from its little-endian bytes. */
function rawTensor(name, dims, dataType, bytes) {
  const raw = Buffer.concat([...dims.map((d) => intField(TENSOR.dims, d)), intField(TENSOR.dataType, dataType),
    stringField(TENSOR.name, name), bytesField(TENSOR.rawData, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))]);
  return { name, dims, data: undefined, raw };
}

/** Adds a float graph output of unknown shape (to read an intermediate tensor, as calibration does). */
function addFloatOutput(model, name) {
  const tensorType = intField(1 /* elem_type */, TENSOR_FLOAT);
  const info = Buffer.concat([stringField(1 /* name */, name), bytesField(2 /* type */, bytesField(1 /* tensor_type */, tensorType))]);
  model.otherGraphFields.push({ field: GRAPH_OUTPUT, raw: bytesField(GRAPH_OUTPUT, info) });
  model.outputNames.push(name);
}

/** The values of an INTS attribute, exact (BigInt64Array: ends of Slice are often INT64_MAX). */
function intsOf(attribute) {
  const out = [];
  for (const f of readFields(attribute.raw)) {
    if (f.field !== ATTRIBUTE.ints) continue;
    if (f.wire === 0) out.push(BigInt.asIntN(64, f.value));
    else for (let pos = 0; pos < f.value.length;) { let v; [v, pos] = readVarint(f.value, pos); out.push(BigInt.asIntN(64, v)); }
  }
  return BigInt64Array.from(out);
}

/**
 * Operators whose attributes became inputs (onnx Changelog): Slice's starts, ends, axes and steps at opset 10,
 * Squeeze's and Unsqueeze's axes at 13. Each name lists the attributes in input order after the data input.
 */
const ATTRIBUTES_TO_INPUTS = [
  { opset: 10, ops: { Slice: ['starts', 'ends', 'axes', 'steps'] } },
  { opset: 13, ops: { Squeeze: ['axes'], Unsqueeze: ['axes'] } },
];

/**
 * Raises the default-domain opset import to at least `opset` and the IR version to at least `irVersion`
 * (QDQ per-channel scales need opset 13). Slice, Squeeze and Unsqueeze nodes of an older opset get their
 * attributes as int64 initializers (the same function in the new opset); other operators must mean the same
 * in both opsets (Softmax does where its axis is the last, as in the face networks).
 */
function raiseOpset(model, opset, irVersion) {
  let from;
  model.modelFields = model.modelFields.map((f) => {
    if (f.field === MODEL.irVersion) {
      const v = Number(readFields(f.raw)[0].value);
      return v >= irVersion ? f : { field: f.field, raw: intField(MODEL.irVersion, irVersion) };
    }
    if (f.field !== MODEL.opsetImport) return f;
    const inner = readFields(readFields(f.raw)[0].value);
    const domain = inner.find((x) => x.field === 1);
    if (domain && domain.value.length) return f;
    const version = Number(inner.find((x) => x.field === 2)?.value ?? 0);
    if (version >= opset) return f;
    from = version;
    return { field: f.field, raw: bytesField(MODEL.opsetImport, Buffer.concat([stringField(1, ''), intField(2, opset)])) };
  });
  if (from === undefined) return;
  for (const step of ATTRIBUTES_TO_INPUTS.filter((s) => s.opset > from && s.opset <= opset)) {
    for (const n of model.nodes) {
      const moved = step.ops[n.opType];
      if (!moved) continue;
      const inputs = moved.map((name) => n.attributes.find((a) => a.name === name));
      const last = inputs.findLastIndex((a) => a);
      n.inputs = [n.inputs[0], ...inputs.slice(0, last + 1).map((a, i) => {
        if (!a) return '';
        const name = `${n.name}_${moved[i]}`;
        const values = intsOf(a);
        model.initializers.set(name, floatTensor(name, [values.length], values));
        return name;
      })];
      n.attributes = n.attributes.filter((a) => !moved.includes(a.name));
    }
  }
}

/** ValueInfoProto of a float tensor with fixed dims (graph inputs and outputs). */
function floatValueInfo(name, dims) {
  const shape = Buffer.concat(dims.map((d) => bytesField(1 /* dim */, intField(1 /* dim_value */, d))));
  const tensorType = Buffer.concat([intField(1 /* elem_type */, TENSOR_FLOAT), bytesField(2 /* shape */, shape)]);
  return Buffer.concat([stringField(1 /* name */, name), bytesField(2 /* type */, bytesField(1 /* tensor_type */, tensorType))]);
}

/**
 * An empty model in the form parseModel gives, for code that builds networks (tests, bench/second-model.ts):
 * add nodes (node()) and initializers (floatTensor()), then serialiseModel().
 */
function newModel({ name, producer, inputs, outputs, opset = 13, irVersion = 8 }) {
  const raw = (field, bytes) => ({ field, raw: bytes });
  return {
    modelFields: [
      raw(MODEL.irVersion, intField(MODEL.irVersion, irVersion)),
      raw(MODEL.producerName, stringField(MODEL.producerName, producer)),
      raw(MODEL_GRAPH, Buffer.alloc(0)),
      raw(MODEL.opsetImport, bytesField(MODEL.opsetImport, Buffer.concat([stringField(1, ''), intField(2, opset)]))),
    ],
    nodes: [],
    initializers: new Map(),
    outputNames: outputs.map(([n]) => n),
    otherGraphFields: [
      raw(GRAPH_NAME, stringField(GRAPH_NAME, name)),
      ...inputs.map(([n, dims]) => raw(GRAPH_INPUT, bytesField(GRAPH_INPUT, floatValueInfo(n, dims)))),
      ...outputs.map(([n, dims]) => raw(GRAPH_OUTPUT, bytesField(GRAPH_OUTPUT, floatValueInfo(n, dims)))),
    ],
  };
}

/**
 * Parses a model: { nodes, initializers (Map by name), ... }. Nodes are in graph order (ONNX requires
 * topological order); serialise() writes nodes first, then initializers, then the graph's other fields.
 */
function parseModel(bytes) {
  const modelFields = readFields(bytes);
  const graphFields = modelFields.filter((f) => f.field === MODEL_GRAPH);
  if (graphFields.length !== 1) throw new Error('onnx: not a model with one graph');
  const fields = readFields(graphFields[0].value);
  const nameOf = (valueInfo) => text(readFields(valueInfo).find((f) => f.field === 1).value);
  return {
    outputNames: fields.filter((f) => f.field === GRAPH_OUTPUT).map((f) => nameOf(f.value)),
    modelFields,
    nodes: fields.filter((f) => f.field === GRAPH_NODE).map((f) => readNode(f.value)),
    initializers: new Map(fields.filter((f) => f.field === GRAPH_INITIALIZER)
      .map((f) => readInitializer(f.value)).map((t) => [t.name, t])),
    otherGraphFields: fields.filter((f) => f.field !== GRAPH_NODE && f.field !== GRAPH_INITIALIZER),
  };
}

function serialiseModel(model) {
  const graph = Buffer.concat([
    ...model.nodes.map((n) => bytesField(GRAPH_NODE, writeNode(n))),
    ...[...model.initializers.values()].map((t) => bytesField(GRAPH_INITIALIZER, t.raw)),
    ...model.otherGraphFields.map((f) => Buffer.from(f.raw)),
  ]);
  return Buffer.concat(model.modelFields.map((f) => (f.field === MODEL_GRAPH ? bytesField(MODEL_GRAPH, graph) : Buffer.from(f.raw))));
}

/** onnx.proto TensorProto.DataType of the tensors the int8 rewrite writes. */
const DATA_TYPE = { float: TENSOR_FLOAT, uint8: 2, int8: 3, int32: 6, int64: TENSOR_INT64 };

module.exports = {
  parseModel, serialiseModel, newModel, node, floatTensor, rawTensor, intAttribute, intsAttribute, addFloatOutput, raiseOpset, DATA_TYPE,
};
