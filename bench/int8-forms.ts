// The int8 forms of the networks the engine runs besides the template's (the detector, the landmark and the
// liveness networks), made in memory from the float file the engine loads and the committed calibration
// table (models/int8-calibration.json), as scripts/fetch-assets.js makes a manifest `int8` form. None of them
// ships (docs/engine.md, int8 template networks): bench:engine --precision measures their speed and
// bench:int8-networks their accuracy against float32, so the decision can be measured again.
import fs from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../src/package-root';
import { manifestModels, modelPath, type ModelId } from './baseline-pipeline';

/* eslint-disable @typescript-eslint/no-require-imports */
const { quantisedModel } = require('../../scripts/onnx-rewrites');
const { parseModel } = require('../../scripts/onnx-model');
/* eslint-enable @typescript-eslint/no-require-imports */

export type PipelineNetwork = 'detect' | 'landmark' | 'liveness';

export interface Int8Form {
  name: string;
  id: PipelineNetwork;
  /** Nodes left in float32 (a manifest `int8.exclude`). */
  exclude: string[];
  why: string;
}

/** The detector's box decoding (priors added to the scaled offsets): quantised, it would round the boxes. */
const DETECT_DECODE = ['Add_158', 'Add_173'];

export const INT8_FORMS: Int8Form[] = [
  { name: 'detect', id: 'detect', exclude: DETECT_DECODE, why: 'every Conv and Add but the box decoding' },
  {
    name: 'detect-first-conv-float', id: 'detect', exclude: [...DETECT_DECODE, 'Conv_0'],
    why: 'the same, the first Conv (3 input channels at 160x120) left in float32',
  },
  { name: 'landmark', id: 'landmark', exclude: [], why: 'every Conv, Add and the Gemm' },
  { name: 'liveness', id: 'liveness', exclude: [], why: 'every Conv, Add and MatMul' },
];

/** The form's model bytes: the engine's float file quantised with the committed table. */
export function int8FormBytes(form: Int8Form): Buffer {
  const table = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'int8-calibration.json'), 'utf8')).models[form.id];
  if (!table) throw new Error(`models/int8-calibration.json has no table for ${form.id}: run npm run calibrate:int8`);
  const float = fs.readFileSync(modelPath(form.id as ModelId));
  // a node named here but gone from the network (another version of it) would be quantised unnoticed
  const names = new Set((parseModel(float).nodes as { name: string }[]).map((n) => n.name));
  const missing = form.exclude.filter((n) => !names.has(n));
  if (missing.length) throw new Error(`int8 form ${form.name}: the network has no node ${missing.join(', ')}`);
  return quantisedModel(float, table, { exclude: form.exclude });
}

/** The input shape the form is fed. */
export const inputShape = (id: PipelineNetwork): number[] => manifestModels()[id].input.shape;
