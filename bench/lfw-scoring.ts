// Scoring of the LFW development view shared by bench:lfw and bench:fusion: pair scores, the DevTrain
// threshold, accuracy, and thresholds at a false-accept rate over every cross-identity impostor pair.
import { identityOf, type Pair } from './lfw-data';

export interface Scored { score: number; same: boolean }

/** Score of two images, or null when one of them has no template (no face found). */
export type PairScorer = (a: string, b: string) => number | null;

export function scorePairs(pairs: Pair[], score: PairScorer): { scored: Scored[]; missing: number } {
  let missing = 0;
  // A pair with an image where no face was found counts as a non-match (score -1): honest, not skipped.
  const scored = pairs.map((p) => {
    const s = score(p.a, p.b);
    if (s === null) missing++;
    return { score: s ?? -1, same: p.same };
  });
  return { scored, missing };
}

export function accuracyAt(scored: Scored[], t: number): number {
  return scored.filter((s) => (s.score >= t) === s.same).length / scored.length;
}

/** The threshold with the best accuracy (the lowest such one on a tie), midway between adjacent scores. */
export function bestThreshold(scored: Scored[]): number {
  const candidates = [...new Set(scored.map((s) => s.score))].sort((a, b) => a - b);
  let best = 0, bestAcc = -1;
  for (let i = 0; i < candidates.length; i++) {
    const t = i === 0 ? candidates[0] : (candidates[i - 1] + candidates[i]) / 2;
    const acc = accuracyAt(scored, t);
    if (acc > bestAcc) { bestAcc = acc; best = t; }
  }
  return best;
}

/** Every cross-identity impostor score among `names` (identity = the folder name, aliases folded). */
export function impostorScores(names: string[], score: (a: string, b: string) => number): Float32Array {
  const ids = names.map(identityOf);
  const out: number[] = [];
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      if (ids[i] !== ids[j]) out.push(score(names[i], names[j]));
    }
  }
  return Float32Array.from(out);
}

export function thresholdAtFar(impostors: Float32Array, far: number): number {
  const sorted = Float32Array.from(impostors).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * (1 - far)))];
}

/** Share of the genuine scores at or above `threshold`. */
export function acceptRate(genuine: number[], threshold: number): number {
  return genuine.filter((g) => g >= threshold).length / genuine.length;
}
