// One kind of data face-check migrate moves: how it is copied from one store to another and how each side's
// checksums are computed (./checksum.ts).
import type { AsyncStore } from '../../storage/interfaces';
import type { Checksums } from './checksum';

export interface CopyCount {
  /** Items written to the target (for counters: raised to the source's count). */
  copied: number;
  /** Items the target held already (left as they are). */
  present: number;
  /** Items that could not be copied, named without their secrets. */
  failed: Array<{ item: string; reason: string }>;
}

export type Progress = (line: string) => void;

export interface MovedKind {
  /** As printed: "licences", "quota counters". */
  readonly name: string;
  copy(from: AsyncStore, to: AsyncStore, progress: Progress): Promise<CopyCount>;
  /** Per account (STORE_SCOPE for items of no account), read through the interface: the same on both backends. */
  checksums(store: AsyncStore): Promise<Checksums>;
}

export function emptyCount(): CopyCount {
  return { copied: 0, present: 0, failed: [] };
}

/** Reports every `every` items of a long copy, and its last, as "done of total". */
export function tick(count: CopyCount, name: string, total: number, progress: Progress, every = 1000): void {
  const done = count.copied + count.present + count.failed.length;
  if (done % every === 0 || done === total) progress(`${name}: ${done} of ${total} (${Math.floor((done / total) * 100)} %)`);
}
