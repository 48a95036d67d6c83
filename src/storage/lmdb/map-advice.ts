// The read-ahead advice of the store's memory map. The store opens LMDB with noReadAhead (LMDB advises its
// map MADV_RANDOM) because its usual reads are a few B-tree pages and one value at a time, scattered over
// the file: under the default advice every cold page fault reads the kernel's whole read-around window,
// which made a cold start's store open and first search slower. A scan of many large values in key order (the
// galleries' rebuild from the template segments) is the opposite case, much slower cold under random advice,
// so it runs under normal advice (figures: docs/benchmarks.md, "Figures behind code comments"). The map belongs to lmdb-js,
// which exposes no address; the addon finds it by the file's inode (native/core/io/mapped_file_advice.h).
import path from 'node:path';

import { storageBinding } from '../native-storage';

/** LMDB's data file in a store folder. */
export function lmdbDataFile(dir: string): string {
  return path.join(dir, 'data.mdb');
}

/**
 * The map's advice for one store: random, normal while at least one scan runs. A store opened for bulk
 * reads (`randomAtRest` false) keeps the default advice throughout, and scans change nothing.
 */
export class MapAdvice {
  private scans = 0;

  constructor(private readonly dataFile: string, private readonly randomAtRest = true) {}

  /** `inner`, read under normal advice; random again once the last scan running finishes or stops. */
  *scan<T>(inner: Iterable<T>): Generator<T> {
    this.begin();
    try {
      yield* inner;
    } finally {
      this.end();
    }
  }

  /** `work`, run under normal advice (the store's own migrations at open, which read every segment). */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.begin();
    try {
      return await work();
    } finally {
      this.end();
    }
  }

  private begin(): void {
    if (this.scans++ === 0 && this.randomAtRest) storageBinding()?.adviseMappedFile(this.dataFile, 'normal');
  }

  private end(): void {
    if (--this.scans === 0 && this.randomAtRest) storageBinding()?.adviseMappedFile(this.dataFile, 'random');
  }
}
