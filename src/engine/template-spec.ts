// The face template's recipe, from models/manifest.json `template`: the embedding networks in template order,
// each with its file, sha256, weight, output size, and the input the native engine feeds it (tensor names,
// size, channel order, normalisation). The manifest drives the native embedder through createEngine's
// `templateNetworks` option (nativeTemplateNetworks), checked here before it reaches C++: a face model
// change is the manifest's. The engine and the benchmarks read it here.
import fs from 'node:fs';
import path from 'node:path';

import type { NativeTemplateNetwork } from '../native';
import { packageRoot } from '../package-root';

export interface TemplateNetwork {
  id: string;
  file: string;
  sha256: string;
  /** Share of the template's cosine (the weights sum to 1). */
  weight: number;
  /** Values the network contributes to the template. */
  size: number;
  /** What the network is fed: an NCHW float32 tensor, value = (pixel - mean) / std per channel. */
  input: { name: string; width: number; height: number; channels: 'RGB' | 'BGR'; mean: number[]; std: number[] };
  /** The output tensor holding the embedding. */
  output: string;
}

export interface ManifestModel {
  id: string;
  file: string;
  sha256: string;
  /** The network's int8 form (scripts/onnx-quantise.js), when it keeps the accuracy guard. */
  int8?: { file: string; sha256: string };
  input: { name: string; shape: number[]; channels: string; mean: number[]; std: number[] };
  outputs: Record<string, number[]>;
}

export interface Manifest {
  models: ManifestModel[];
  template: { models: { id: string; weight: number }[]; precision?: Precision };
}

/** int8: each template network's int8 form where the manifest has one (float32 where it has not). */
export type Precision = 'int8' | 'float32';

/**
 * The precision the engine uses unless told: FACE_CHECK_PRECISION when set (int8 or float32), else the
 * manifest's `template.precision`, else float32.
 */
export function defaultPrecision(manifest: Manifest = readManifest()): Precision {
  const chosen = process.env.FACE_CHECK_PRECISION || manifest.template?.precision || 'float32';
  if (chosen !== 'int8' && chosen !== 'float32') throw new Error(`face-check: precision must be int8 or float32 (has ${chosen})`);
  return chosen;
}

export function readManifest(): Manifest {
  return JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'manifest.json'), 'utf8')) as Manifest;
}

const positiveInt = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0;
const finite = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

/** One template network from its manifest row; throws naming what is wrong. */
function templateNetwork(model: ManifestModel, weight: number, precision: Precision): TemplateNetwork {
  const bad = (what: string) => new Error(`face-check: the manifest's template model ${model.id}: ${what}`);
  const { input } = model;
  if (!input || typeof input.name !== 'string' || !input.name) throw bad('input.name must be a tensor name');
  const shape = input.shape;
  if (!Array.isArray(shape) || shape.length !== 4 || shape[0] !== 1 || shape[1] !== 3 || !positiveInt(shape[2]) || !positiveInt(shape[3])) {
    throw bad(`input.shape must be [1, 3, height, width] (has ${JSON.stringify(shape)})`);
  }
  if (input.channels !== 'RGB' && input.channels !== 'BGR') throw bad(`input.channels must be RGB or BGR (has ${input.channels})`);
  if (!Array.isArray(input.mean) || input.mean.length !== 3 || !input.mean.every(finite)) throw bad('input.mean must be 3 numbers');
  if (!Array.isArray(input.std) || input.std.length !== 3 || !input.std.every((s) => finite(s) && s !== 0)) {
    throw bad('input.std must be 3 non-zero numbers');
  }
  const outputs = Object.entries(model.outputs ?? {});
  if (outputs.length !== 1) throw bad('must have exactly one output (the embedding)');
  const [output, outShape] = outputs[0];
  if (!Array.isArray(outShape) || outShape.length !== 2 || outShape[0] !== 1 || !positiveInt(outShape[1])) {
    throw bad(`output ${output} must be shaped [1, size] (has ${JSON.stringify(outShape)})`);
  }
  if (!finite(weight) || weight <= 0) throw bad(`weight must be positive (has ${weight})`);
  const { file, sha256 } = precision === 'int8' && model.int8 ? model.int8 : model;
  return {
    id: model.id, file, sha256, weight, size: outShape[1],
    input: { name: input.name, height: shape[2], width: shape[3], channels: input.channels, mean: [...input.mean], std: [...input.std] },
    output,
  };
}

export function templateNetworks(manifest: Manifest = readManifest(), precision: Precision = defaultPrecision(manifest)): TemplateNetwork[] {
  const listed = manifest.template?.models ?? [];
  if (listed.length === 0) throw new Error('face-check: the manifest\'s template lists no model');
  const networks = listed.map(({ id, weight }) => {
    const model = manifest.models.find((m) => m.id === id);
    if (!model) throw new Error(`face-check: the manifest's template names an unknown model ${id}`);
    return templateNetwork(model, weight, precision);
  });
  const total = networks.reduce((sum, n) => sum + n.weight, 0);
  if (Math.abs(total - 1) > 1e-3) throw new Error(`face-check: the manifest's template weights must sum to 1 (sum ${total})`);
  return networks;
}

/** The networks as the native engine takes them (createEngine's `templateNetworks`). */
export function nativeTemplateNetworks(networks: TemplateNetwork[]): NativeTemplateNetwork[] {
  return networks.map(({ file, weight, size, input, output }) => ({
    file, input: input.name, output, width: input.width, height: input.height, channels: input.channels,
    mean: input.mean, std: input.std, outputSize: size, weight,
  }));
}

/** Values in one template (704: fr_feature's 512 and MobileFaceNet's 192). */
export const templateSize = (networks = templateNetworks()) => networks.reduce((n, net) => n + net.size, 0);

/**
 * The identifier stored with every template: each network's file, the first 12 hex digits of its sha256
 * and its weight, so a change of any file or weight (or flip-averaging, or int8 for float32: another file)
 * marks old templates for a reindex.
 */
export function templateModelId(networks = templateNetworks(), flipAverage = false): string {
  const parts = networks.map((n) => `${n.file.replace(/\.onnx$/, '')}@${n.sha256.slice(0, 12)}:${n.weight}`);
  return `${parts.join('+')}${flipAverage ? '+flip' : ''}`;
}
