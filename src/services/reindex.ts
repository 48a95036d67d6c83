// face-check reindex: recomputes templates from the stored reference images with the current engine, so
// persons enrolled under an older model can match again. created/updated stay: the person's reference
// data did not change. Run it while the service is stopped (the service's galleries load at start).
import type { Config } from '../config/types';
import type { FaceEngine } from '../engine/types';
import { decodeImageBytes } from '../image/decode';
import type { AsyncStore } from '../storage/interfaces';
import { operationOptions } from './operation-stages';

export interface ReindexReport {
  done: number;
  skipped: number;
  failed: { accountId: string; personId: string; reason: string }[];
}

/** `all`: recompute every template, not only those of another model. */
export async function reindex(
  config: Config, store: AsyncStore, engine: FaceEngine, opts: { all?: boolean; progress?: (line: string) => void } = {},
): Promise<ReindexReport> {
  const report: ReindexReport = { done: 0, skipped: 0, failed: [] };
  const limits = { maxBytes: config.image.max_bytes, maxPixels: config.image.max_pixels };
  // Collect first: the loop writes to the database it would otherwise be iterating.
  const persons: Array<{ accountId: string; personId: string; modelId: string }> = [];
  for await (const { accountId, personId, modelId } of store.persons.all()) persons.push({ accountId, personId, modelId });
  for (const p of persons) {
    if (!opts.all && p.modelId === engine.modelId) {
      report.skipped++;
      continue;
    }
    try {
      const bytes = await store.persons.referenceImage(p.accountId, p.personId);
      if (!bytes) throw new Error('no reference image stored');
      const rgb = await decodeImageBytes('referenceImage', bytes, limits);
      const faces = await engine.analyze(rgb, operationOptions('reindex'));
      if (faces.length === 0) throw new Error('the engine finds no face in the reference image');
      await store.persons.setTemplate(p.accountId, p.personId, engine.modelId, faces[0].embedding);
      report.done++;
      opts.progress?.(`reindexed ${p.accountId}/${p.personId}`);
    } catch (err) {
      report.failed.push({ accountId: p.accountId, personId: p.personId, reason: (err as Error).message });
    }
  }
  return report;
}
