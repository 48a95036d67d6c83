// The face template's recipe, from models/manifest.json `template`: the embedding networks in the native
// engine's order (fr_feature, then MobileFaceNet; native/core/face_embedder.cpp takes the weights by
// position), each with its file, sha256, weight and output size. The engine and the benchmarks read it here.
import fs from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../package-root';

export interface TemplateNetwork {
  id: string;
  file: string;
  sha256: string;
  /** Share of the template's cosine (the weights sum to 1). */
  weight: number;
  /** Values the network contributes to the template. */
  size: number;
}

interface Manifest {
  models: { id: string; file: string; sha256: string; outputs: Record<string, number[]> }[];
  template: { models: { id: string; weight: number }[] };
}

export function templateNetworks(): TemplateNetwork[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'manifest.json'), 'utf8')) as Manifest;
  const order = manifest.template.models.map((m) => m.id).join(',');
  if (order !== 'feature,mobilefacenet') throw new Error(`face-check: the manifest's template must list feature, mobilefacenet (has ${order})`);
  return manifest.template.models.map(({ id, weight }) => {
    const model = manifest.models.find((m) => m.id === id);
    if (!model) throw new Error(`face-check: the manifest's template names an unknown model ${id}`);
    return { id, file: model.file, sha256: model.sha256, weight, size: Object.values(model.outputs)[0][1] };
  });
}

/** Values in one template (704: fr_feature's 512 and MobileFaceNet's 192). */
export const templateSize = (networks = templateNetworks()) => networks.reduce((n, net) => n + net.size, 0);

/**
 * The identifier stored with every template: each network's file, the first 12 hex digits of its sha256
 * and its weight, so a change of any file or weight (or flip-averaging) marks old templates for a reindex.
 */
export function templateModelId(networks = templateNetworks(), flipAverage = false): string {
  const parts = networks.map((n) => `${n.file.replace(/\.onnx$/, '')}@${n.sha256.slice(0, 12)}:${n.weight}`);
  return `${parts.join('+')}${flipAverage ? '+flip' : ''}`;
}
