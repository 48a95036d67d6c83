// LFW development view: pair lists and per-image templates (cached in bench/out so calibration and
// accuracy runs reuse one pass of the engine).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { createEngine } from '../src/engine';
import { packageRoot } from '../src/package-root';
import { defaultPrecision, type Precision } from '../src/engine/template-spec';
import type { FaceAnalysis, FaceEngine } from '../src/engine/types';
import { loadRgb, mapLimit, outDir } from './common';

/**
 * LFW names that are one person filed twice (spelling variants); pairs across them are not impostors.
 * Found by listing the highest-scoring cross-name pairs (cosine > 0.7) and checking the names.
 */
const IDENTITY_ALIASES: Record<string, string> = {
  Sepp_Blatter: 'Joseph_Blatter',
  Sung_Hong_Choi: 'Choi_Sung-hong',
  Hassan_Wirajuda: 'Hasan_Wirayuda',
};

/** The identity of an image path `Name/Name_NNNN.jpg`, with aliases folded. */
export function identityOf(imagePath: string): string {
  const name = imagePath.split('/')[0];
  return IDENTITY_ALIASES[name] ?? name;
}

export interface Pair {
  a: string;
  b: string;
  same: boolean;
}

export function readPairs(lfwDir: string, file: string): Pair[] {
  const lines = fs.readFileSync(path.join(lfwDir, file), 'utf8').trim().split('\n').slice(1);
  const img = (name: string, n: string) => `${name}/${name}_${n.padStart(4, '0')}.jpg`;
  return lines.map((line) => {
    const f = line.trim().split(/\s+/);
    return f.length === 3 ? { a: img(f[0], f[1]), b: img(f[0], f[2]), same: true }
      : { a: img(f[0], f[1]), b: img(f[2], f[3]), same: false };
  });
}

/** The face LFW means: the one nearest the centre of the (roughly centred) photo. */
export function centralFace(faces: FaceAnalysis[], width: number, height: number): FaceAnalysis | undefined {
  let best: FaceAnalysis | undefined;
  let bestD = Infinity;
  for (const f of faces) {
    if (!f.analyzed) continue;
    const d = Math.hypot(f.box.x + f.box.width / 2 - width / 2, f.box.y + f.box.height / 2 - height / 2);
    if (d < bestD) { bestD = d; best = f; }
  }
  return best;
}

const dimensionOf = (templates: (Float32Array | null)[]) => templates.find((t) => t)?.length ?? 0;

export interface TemplateSet {
  dim: number;
  names: string[];
  /** null where no face was found. */
  templates: (Float32Array | null)[];
}

/** Templates of every named image, from the cache when it was made with the same settings. */
export async function lfwTemplates(lfwDir: string, names: string[],
  options: { flipAverage: boolean; tag: string; precision?: Precision }, engine?: FaceEngine): Promise<TemplateSet> {
  const precision = options.precision ?? defaultPrecision();
  const cache = path.join(outDir(), `lfw-templates-${options.tag}${precision === 'int8' ? '-int8' : ''}.json`);
  // Templates depend on every model (detector and landmarks too): a cache made with other model files is stale.
  const models = crypto.createHash('sha256').update(fs.readFileSync(path.join(packageRoot(), 'models', 'manifest.json'))).digest('hex');
  if (fs.existsSync(cache)) {
    const c = JSON.parse(fs.readFileSync(cache, 'utf8'));
    if (c.models === models && names.every((n) => n in c.templates)) {
      const templates = names.map((n) => (c.templates[n] ? Float32Array.from(c.templates[n]) : null));
      return { dim: dimensionOf(templates), names, templates };
    }
  }
  const own = engine ?? await createEngine({ flipAverage: options.flipAverage, precision });
  let done = 0;
  const templates = await mapLimit(names, 2, async (name) => {
    const image = await loadRgb(path.join(lfwDir, 'images', name));
    const faces = await own.analyze(image, { maxFaces: 8 });
    if (++done % 500 === 0) process.stderr.write(`  ${done}/${names.length} images\n`);
    return centralFace(faces, image.width, image.height)?.embedding ?? null;
  });
  if (!engine) await own.close();
  const record: Record<string, number[] | null> = {};
  names.forEach((n, i) => { record[n] = templates[i] ? Array.from(templates[i]!) : null; });
  fs.writeFileSync(cache, JSON.stringify({ models, flipAverage: options.flipAverage, templates: record }));
  return { dim: dimensionOf(templates), names, templates };
}
