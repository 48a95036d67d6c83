// The one dot product of templates. It is the index's float32 kernel, so a pair scored here (compare,
// verify's fallback, benchmarks) gets the same cosine the index gives the same pair in a search.
import { similarityIndex } from '../similarity-index/similarity-index';

/** Cosine similarity of two L2-normalised templates of equal length. */
export function dot(a: Float32Array, b: Float32Array): number {
  return similarityIndex().dot(a, b);
}
