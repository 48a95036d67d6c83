// The face engine as the services see it, with each analysis's stage times reported for the metrics.
// The engine measures its stages on every analysis (analyze() is profile() without the times), so asking
// for them costs nothing extra.
import type { AnalyzeOptions, FaceAnalysis, FaceEngine, RgbImage } from '../engine/types';
import type { StageTimings } from '../native';

export function timedEngine(engine: FaceEngine, observe: (timings: StageTimings) => void): FaceEngine {
  const profile = async (image: RgbImage, options?: AnalyzeOptions) => {
    const result = await engine.profile(image, options);
    observe(result.timings);
    return result;
  };
  return {
    get modelId() { return engine.modelId; },
    get templateSize() { return engine.templateSize; },
    get pending() { return engine.pending; },
    analyze: async (image: RgbImage, options?: AnalyzeOptions): Promise<FaceAnalysis[]> => (await profile(image, options)).faces,
    profile,
    close: () => engine.close(),
  };
}
