// The float32 and the int8 template networks side by side on the same photos, one thread each: the time of
// photo -> template and of its embedding stage per run, and how far the two precisions' templates are apart.
// Runs alternate between the two engines (which goes first swaps every run), after warm-up runs of both, so
// what else the machine does falls on both alike: their ratio is what to read, not a single time.
import fs from 'node:fs';
import path from 'node:path';

import { dot } from '../matching/dot';
import { packageRoot } from '../package-root';
import { createEngine } from './index';
import { templateNetworks, type Precision } from './template-spec';
import type { AnalyzeOptions, FaceEngine, RgbImage } from './types';

export const PRECISIONS: readonly Precision[] = ['float32', 'int8'];

/** The int8 networks cannot be loaded: the manifest lists no int8 form, or the install did not make its file. */
export class Int8ModelError extends Error {}

/** A photo in which one of the engines found no face. */
export class NoFaceError extends Error {
  constructor(readonly photo: string) {
    super(`no face found in ${photo}`);
  }
}

export interface ComparedPhoto {
  /** How the photo is named in messages (its path). */
  name: string;
  rgb: RgbImage;
}

export interface PrecisionRuns {
  modelId: string;
  /** Milliseconds per run: the whole analysis (detection to template) and its embedding stage. */
  photoToTemplate: number[];
  embed: number[];
}

export interface PrecisionComparison {
  float32: PrecisionRuns;
  int8: PrecisionRuns;
  /** The template networks that have an int8 form (the others run in float32 in both engines). */
  int8Networks: string[];
  /** The lowest cosine between the float32 and the int8 template of the same photo's largest face. */
  lowestCosine: number;
}

export interface ComparisonOptions {
  /** Measured runs per precision; each run is one photo, the photos taken in turn. */
  runs: number;
  /** Unmeasured runs per precision first (loads the networks' pages, fills the allocators). */
  warmup: number;
  /** The stages each analysis runs (an operation's: services/operation-stages.ts). */
  analyze: AnalyzeOptions;
  modelDir?: string;
}

/** The template networks with an int8 form; throws Int8ModelError when there is none or a file is missing. */
export function int8Networks(modelDir: string): string[] {
  const float32 = templateNetworks(undefined, 'float32');
  const int8 = templateNetworks(undefined, 'int8').filter((n, i) => n.file !== float32[i].file);
  if (int8.length === 0) throw new Int8ModelError('models/manifest.json lists no int8 form of any template network');
  for (const { file } of int8) {
    if (!fs.existsSync(path.join(modelDir, file))) {
      throw new Int8ModelError(`the int8 model ${file} is missing in ${modelDir}: the install makes it from ` +
        `models/int8-calibration.json; run \`node scripts/fetch-assets.js models\` in ${packageRoot()} (or install the package again)`);
    }
  }
  return int8.map((n) => n.id);
}

async function templateOf(engine: FaceEngine, photo: ComparedPhoto, options: AnalyzeOptions): Promise<Float32Array> {
  const [face] = await engine.analyze(photo.rgb, options);
  if (!face?.embedding.length) throw new NoFaceError(photo.name);
  return face.embedding;
}

export async function comparePrecisions(photos: ComparedPhoto[], options: ComparisonOptions): Promise<PrecisionComparison> {
  if (photos.length === 0) throw new Error('comparePrecisions: no photo');
  const modelDir = path.resolve(options.modelDir ?? path.join(packageRoot(), 'models'));
  const networks = int8Networks(modelDir);
  const engines: FaceEngine[] = [];
  try {
    for (const precision of PRECISIONS) engines.push(await createEngine({ modelDir, precision, threads: 1 }));
    let lowestCosine = 1;
    for (const photo of photos) {
      const [a, b] = [await templateOf(engines[0], photo, options.analyze), await templateOf(engines[1], photo, options.analyze)];
      lowestCosine = Math.min(lowestCosine, dot(a, b));
    }
    const runs: PrecisionRuns[] = engines.map((e) => ({ modelId: e.modelId, photoToTemplate: [], embed: [] }));
    for (let i = 0; i < options.warmup + options.runs; i++) {
      const photo = photos[i % photos.length];
      for (const k of i % 2 ? [1, 0] : [0, 1]) {
        const { faces, timings } = await engines[k].profile(photo.rgb, options.analyze);
        if (!faces.length) throw new NoFaceError(photo.name);
        if (i < options.warmup) continue;
        runs[k].photoToTemplate.push(timings.total);
        runs[k].embed.push(timings.embed);
      }
    }
    return { float32: runs[0], int8: runs[1], int8Networks: networks, lowestCosine };
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}
