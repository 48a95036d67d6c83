// POST /person/compare-face: the largest face of sourceImage against the largest face of targetImage.
// similarity: percent 0..100 (two decimals) of that pair; 0 when either image has no face.
// facesMatched (cloud): 1 when similarity reaches the threshold, else 0 - the spec compares with the
// largest target face only, so at most one face can match.
// similarityThreshold: percent 0..100, default [matching] compare_threshold; it decides facesMatched and
// does not change similarity (the device answer).
import { dot } from '../matching/dot';
import { analyse, type Caller, type ServiceContext } from './context';
import { decodeField, releasing } from './images';
import { consumeQuota } from './quota';

export interface CompareInput {
  targetImage: string;
  sourceImage: string;
  similarityThreshold?: number;
}

export interface CompareResult {
  similarity: number;
  facesMatched: number;
}

export async function comparePersons(ctx: ServiceContext, caller: Caller, input: CompareInput): Promise<CompareResult> {
  // Sequential decoding: a bad targetImage is reported before sourceImage is even decoded.
  const [targetFaces, sourceFaces] = await releasing(await decodeField(ctx, 'targetImage', input.targetImage), async (target) =>
    releasing(await decodeField(ctx, 'sourceImage', input.sourceImage), async (source) => {
      await consumeQuota(ctx, caller.accountId);
      return Promise.all([analyse(ctx, target.rgb, 'compare'), analyse(ctx, source.rgb, 'compare')]);
    }));
  const [a, b] = [sourceFaces[0], targetFaces[0]];
  if (!a || !b) return { similarity: 0, facesMatched: 0 };
  const similarity = ctx.scale.percent(dot(a.embedding, b.embedding));
  const threshold = input.similarityThreshold ?? ctx.config.matching.compare_threshold;
  return { similarity, facesMatched: similarity >= threshold ? 1 : 0 };
}
