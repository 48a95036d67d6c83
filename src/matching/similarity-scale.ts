// The one mapping from template cosine similarity to the similarity percent (0..100) every threshold and
// response uses. Piecewise-linear through anchor points, monotonic non-decreasing, so a percent threshold
// has an equivalent cosine floor for the index. The anchors are calibrated on LFW (issue 5).

export interface Anchor {
  cosine: number;
  similarity: number;
}

/** Strictly increasing cosine; non-decreasing similarity from 0 to 100. Below the first anchor: 0. */
export const SIMILARITY_ANCHORS: readonly Anchor[] = Object.freeze([
  { cosine: 0, similarity: 0 },
  { cosine: 0.3, similarity: 80 },
  { cosine: 0.45, similarity: 98 },
  { cosine: 1, similarity: 100 },
]);

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
