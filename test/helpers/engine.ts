// The real engine for contract tests that must also hold with models: src/engine/index.ts when it loads
// (addon built, models fetched), else undefined with the reason, so those tests skip with a clear message.
import type { FaceEngine } from '../../src/engine/types';

let attempt: Promise<{ engine?: FaceEngine; reason?: string }> | undefined;

export function loadRealEngine(): Promise<{ engine?: FaceEngine; reason?: string }> {
  attempt ??= (async () => {
    try {
      const mod = require('../../src/engine/index') as { createEngine(o?: object): Promise<FaceEngine> };
      return { engine: await mod.createEngine({}) };
    } catch (err) {
      return { reason: `real engine unavailable (src/engine/index.ts): ${(err as Error).message.split('\n')[0]}` };
    }
  })();
  return attempt;
}

/** The real engine, or undefined; `skip` is the tap skip message when undefined. */
export async function realEngine(): Promise<{ engine?: FaceEngine; skip: string | false }> {
  const { engine, reason } = await loadRealEngine();
  return { engine, skip: engine ? false : reason ?? 'real engine unavailable' };
}
