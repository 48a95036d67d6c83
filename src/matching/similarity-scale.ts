// The one mapping from template cosine similarity to the similarity percent (0..100) every threshold and
// response uses. Piecewise-linear through anchor points, monotonic non-decreasing, so a percent threshold
// has an equivalent cosine floor for the index. The anchors come from models/similarity-scale.json,
// written by `npm run bench:calibration -- --write` from LFW: a false-match rate of 1e-k sits at
// 80 + 9(k - 4) percent, so 80 % means FMR 1e-4 and 98 % means FMR 1e-6.
import fs from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../package-root';

export interface Anchor {
  cosine: number;
  similarity: number;
}

/** Strictly increasing cosine; non-decreasing similarity from 0 to 100. Below the first anchor: 0. */
export const SIMILARITY_ANCHORS: readonly Anchor[] = Object.freeze(
  (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'similarity-scale.json'), 'utf8')).anchors as Anchor[])
    .map((a) => Object.freeze({ cosine: a.cosine, similarity: a.similarity })),
);

export class SimilarityScale {
  readonly anchors: readonly Anchor[];

  constructor(anchors: readonly Anchor[] = SIMILARITY_ANCHORS) {
    checkAnchors(anchors);
    this.anchors = anchors;
  }

  /** Percent 0..100 for a cosine in [-1, 1]. */
  toSimilarity(cosine: number): number {
    const a = this.anchors;
    if (!(cosine > a[0].cosine)) return a[0].similarity; // also maps NaN to the bottom
    for (let i = 1; i < a.length; i++) {
      if (cosine <= a[i].cosine) {
        const lo = a[i - 1];
        const hi = a[i];
        return lo.similarity + ((cosine - lo.cosine) / (hi.cosine - lo.cosine)) * (hi.similarity - lo.similarity);
      }
    }
    return a[a.length - 1].similarity;
  }

  /**
   * The smallest cosine whose similarity reaches `similarity` (percent): a floor for index searches.
   * 0% or less: -1 (every template qualifies); above the top anchor: +Infinity (none does).
   */
  toCosineFloor(similarity: number): number {
    const a = this.anchors;
    if (similarity <= a[0].similarity) return -1;
    for (let i = 1; i < a.length; i++) {
      const lo = a[i - 1];
      const hi = a[i];
      if (similarity <= hi.similarity && hi.similarity > lo.similarity) {
        return lo.cosine + ((similarity - lo.similarity) / (hi.similarity - lo.similarity)) * (hi.cosine - lo.cosine);
      }
    }
    return Number.POSITIVE_INFINITY;
  }

  /** The percent responses show and thresholds are compared with (two decimals). */
  percent(cosine: number): number {
    return roundSimilarity(this.toSimilarity(cosine));
  }

  /**
   * The cosine floor of a search whose hits are then judged on `percent(hit) >= threshold`: a hair below
   * the exact floor, so a float32 score at the boundary is not pruned before that decision is made.
   */
  cosineFloor(percent: number): number {
    return this.toCosineFloor(percent) - 1e-6;
  }
}

/** Percent with two decimals: what responses show and what thresholds are compared with. */
export function roundSimilarity(similarity: number): number {
  return Math.round(similarity * 100) / 100;
}

function checkAnchors(anchors: readonly Anchor[]): void {
  if (anchors.length < 2) throw new Error('similarity scale: at least two anchors');
  if (anchors[0].similarity !== 0 || anchors[anchors.length - 1].similarity !== 100) {
    throw new Error('similarity scale: anchors must run from 0 to 100 percent');
  }
  for (let i = 1; i < anchors.length; i++) {
    if (!(anchors[i].cosine > anchors[i - 1].cosine) || anchors[i].similarity < anchors[i - 1].similarity) {
      throw new Error(`similarity scale: anchor ${i} breaks monotonicity`);
    }
  }
}
