// The similarity index binding for the index tests: the addon at FACE_CHECK_ADDON (a .node file, for a
// build made elsewhere) or the package's own build via node-gyp-build.
import { loadIndexBinding, SimilarityIndex, type IndexBinding } from '../../src/similarity-index/similarity-index';

export function indexBinding(): IndexBinding {
  const file = process.env.FACE_CHECK_ADDON;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return file ? (require(file) as { index: IndexBinding }).index : loadIndexBinding();
}

export function newIndex(): SimilarityIndex {
  return new SimilarityIndex(indexBinding());
}

/** Deterministic PRNG (mulberry32) so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples from a uniform PRNG (Box-Muller). */
export function gaussian(rand: () => number): () => number {
  return () => {
    const u = 1 - rand();
    const v = rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

export function randomVectors(n: number, dim: number, seed: number): Float32Array {
  const g = gaussian(rng(seed));
  const out = new Float32Array(n * dim);
  for (let i = 0; i < out.length; i++) out[i] = g();
  return out;
}

/** L2-normalised copy in float32 (zero stays zero), the way the index stores templates. */
export function normalised(v: Float32Array): Float32Array {
  let ss = 0;
  for (const x of v) ss += x * x;
  const out = new Float32Array(v.length);
  if (ss === 0) return out;
  const inv = 1 / Math.sqrt(ss);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * inv;
  return out;
}

export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

export interface RefHit {
  key: string;
  score: number;
}

/** Plain brute force over normalised templates: score desc, then key (code point order). */
export function bruteForce(templates: Map<string, Float32Array>, query: Float32Array, k: number, floor = -Infinity): RefHit[] {
  const q = normalised(query);
  const all: RefHit[] = [];
  for (const [key, t] of templates) {
    const score = dot(q, t);
    if (score >= floor) all.push({ key, score });
  }
  all.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return all.slice(0, k);
}

/**
 * Whether `got` is a correct top-k given the reference ranking `want` (computed with a different summation
 * order): the same length, scores within `tol` position by position, and any key difference explained by
 * reference scores closer than `tol` (a near tie that rounding may order either way).
 */
export function sameTopK(got: RefHit[], want: RefHit[], all: Map<string, number>, tol = 1e-5): string | undefined {
  if (got.length !== want.length) return `length ${got.length} vs ${want.length}`;
  for (let i = 0; i < got.length; i++) {
    if (Math.abs(got[i].score - want[i].score) > tol) return `score ${i}: ${got[i].score} vs ${want[i].score}`;
    if (got[i].key !== want[i].key) {
      const ref = all.get(got[i].key);
      if (ref === undefined || Math.abs(ref - want[i].score) > tol) return `key ${i}: ${got[i].key} vs ${want[i].key}`;
    }
  }
  return undefined;
}
