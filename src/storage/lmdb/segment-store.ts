// The `templates` database: an account's templates of one model in sealed segments of up to 32
// (./template-segment.ts), key [modelId, accountId, n], plus `templates-with-room` (the segments an enrolment
// can still fill, with their entry counts) and `template-counts` (templates per [modelId, accountId]: what a
// gallery started from a snapshot must hold, read in O(1)). The writes are called inside the person's write
// transaction (./persons.ts); the reads serve the full gallery rebuild, which copies segments block by block.
import type { Database, RootDatabase } from 'lmdb';

import {
  decodeSegment, emptySegment, encodeSegment, SEGMENT_CAPACITY, segmentIds, segmentLayout, templateIn, withAppended,
  withoutTemplate, withTemplate, type Segment,
} from './template-segment';
import { entriesWithPrefix, keysWithPrefix, lastNumberedKey } from './key-prefix';
import type { Sealer } from '../crypto/sealer';
import type { TemplateBlock } from '../records';

export const TEMPLATES_DB = 'templates';

export type SegmentKey = [string, string, number];

export class SegmentStore {
  private readonly segments: Database<Buffer, SegmentKey>;
  /** Segments with fewer than SEGMENT_CAPACITY entries, so an enrolment fills them before opening a new one. */
  private readonly withRoom: Database<number, SegmentKey>;
  private readonly counts: Database<number, [string, string]>;

  constructor(root: RootDatabase, private readonly sealer: Sealer) {
    this.segments = root.openDB<Buffer, SegmentKey>({ name: TEMPLATES_DB, encoding: 'binary' });
    this.withRoom = root.openDB<number, SegmentKey>({ name: 'templates-with-room' });
    this.counts = root.openDB<number, [string, string]>({ name: 'template-counts' });
  }

  /** The template of `personId` in segment [modelId, accountId, n] (a copy), or undefined. */
  template(key: SegmentKey, personId: string): Float32Array | undefined {
    const bytes = this.bytes(key);
    return bytes && templateIn(bytes, personId);
  }

  read(key: SegmentKey): Segment | undefined {
    const bytes = this.bytes(key);
    return bytes && decodeSegment(bytes);
  }

  /** Writes the segment that held `before` entries (0: a new one), keeping the account's count. */
  write(key: SegmentKey, segment: Segment, before: number): void {
    const delta = segment.ids.length - before;
    if (delta !== 0) {
      const countKey: [string, string] = [key[0], key[1]];
      const n = (this.counts.get(countKey) ?? 0) + delta;
      if (n > 0) this.counts.put(countKey, n);
      else this.counts.remove(countKey);
    }
    if (segment.ids.length === 0) {
      this.segments.remove(key);
      this.withRoom.remove(key);
      return;
    }
    this.segments.put(key, this.sealer.seal(TEMPLATES_DB, key, encodeSegment(segment)));
    if (segment.ids.length < SEGMENT_CAPACITY) this.withRoom.put(key, segment.ids.length);
    else this.withRoom.remove(key);
  }

  /** Puts the person's template under `modelId`, in place when the model is unchanged; returns its segment. */
  move(accountId: string, personId: string, from: { modelId: string; segment: number }, modelId: string, template: Float32Array): number {
    const oldKey: SegmentKey = [from.modelId, accountId, from.segment];
    const segment = this.read(oldKey);
    if (!segment || !segment.ids.includes(personId)) {
      throw new Error(`storage: template of ${accountId}/${personId} missing from its segment`);
    }
    if (from.modelId === modelId && segment.dimension === template.length) {
      this.write(oldKey, withTemplate(segment, personId, template), segment.ids.length);
      return from.segment;
    }
    this.write(oldKey, withoutTemplate(segment, personId), segment.ids.length);
    return this.append(modelId, accountId, [{ personId, template }]).get(personId)!;
  }

  /** Takes the person's template out of its segment; returns it. */
  remove(accountId: string, personId: string, from: { modelId: string; segment: number }): Float32Array {
    const key: SegmentKey = [from.modelId, accountId, from.segment];
    const segment = this.read(key);
    const i = segment ? segment.ids.indexOf(personId) : -1;
    if (!segment || i < 0) throw new Error(`storage: template of ${accountId}/${personId} missing from its segment`);
    const template = segment.templates.slice(i * segment.dimension, (i + 1) * segment.dimension);
    this.write(key, withoutTemplate(segment, personId), segment.ids.length);
    return template;
  }

  /** Places templates in the account's segments with room, then in new ones; each segment written once. */
  append(modelId: string, accountId: string, entries: ReadonlyArray<{ personId: string; template: Float32Array }>): Map<string, number> {
    const placed = new Map<string, number>();
    // Each segment with room takes at least one entry, so no more of them can be needed than entries.
    const withRoom = [...keysWithPrefix(this.withRoom, [modelId, accountId], entries.length)].map((k) => k[2]);
    let next: number | undefined;
    const newSegment = () => {
      if (next === undefined) {
        const last = lastNumberedKey(this.segments, [modelId, accountId]);
        next = last ? last[2] + 1 : 0;
      }
      return next++;
    };
    let i = 0;
    while (i < entries.length) {
      const number = withRoom.length ? withRoom.shift()! : newSegment();
      const key: SegmentKey = [modelId, accountId, number];
      const existing = this.read(key);
      const { segment, taken } = withAppended(existing ?? emptySegment(entries[i].template.length), entries, i);
      if (taken === 0) continue;  // a segment of another dimension: try the next one
      for (let k = i; k < i + taken; k++) placed.set(entries[k].personId, number);
      i += taken;
      this.write(key, segment, existing?.ids.length ?? 0);
    }
    return placed;
  }

  /**
   * The stored templates of `modelId` (of one account when given), segment by segment in key order (an
   * account's segments are contiguous). A segment is read from LMDB's shared buffer without a copy and
   * decrypted once; copy `bytes` before taking the next block.
   */
  *blocks(modelId: string, accountId?: string): Generator<TemplateBlock> {
    for (const key of keysWithPrefix(this.segments, accountId === undefined ? [modelId] : [modelId, accountId])) {
      const sealed = this.bytes(key);
      if (!sealed) continue;
      const layout = segmentLayout(sealed);
      if (layout.count === 0) continue;
      yield { accountId: key[1], ids: segmentIds(sealed, layout), dimension: layout.dimension, bytes: sealed.subarray(layout.templatesAt, layout.idsAt) };
    }
  }

  /** Every segment key of every model, in key order (the template-rows migration), from `after` on. */
  *allKeys(after?: SegmentKey): Generator<SegmentKey> {
    for (const key of this.segments.getKeys(after ? { start: after } : {})) {
      if (after && key[0] === after[0] && key[1] === after[1] && key[2] === after[2]) continue;
      yield key;
    }
  }

  /** Opened segment value (a fresh buffer), or undefined. */
  bytes(key: SegmentKey): Buffer | undefined {
    const sealed = sharedView(this.segments.getBinaryFast(key));
    return sealed && this.sealer.open(TEMPLATES_DB, key, sealed);
  }

  /** The accounts holding templates of `modelId`, in key order (from the counts). */
  accounts(modelId: string): string[] {
    const out: string[] = [];
    for (const { key, value } of entriesWithPrefix(this.counts, [modelId])) if (value > 0) out.push(key[1]);
    return out;
  }

  /** Templates of `modelId` in the account. */
  count(modelId: string, accountId: string): number {
    return this.counts.get([modelId, accountId]) ?? 0;
  }

  /**
   * The counts as the segments hold them, from their keys alone (full segments hold SEGMENT_CAPACITY, the
   * others are listed with their counts in `templates-with-room`): what the migration to schema 4 writes.
   */
  countFromKeys(): Map<string, { modelId: string; accountId: string; count: number }> {
    const out = new Map<string, { modelId: string; accountId: string; count: number }>();
    const entry = (modelId: string, accountId: string) => {
      const k = JSON.stringify([modelId, accountId]);
      let e = out.get(k);
      if (!e) out.set(k, (e = { modelId, accountId, count: 0 }));
      return e;
    };
    for (const key of this.segments.getKeys()) entry(key[0], key[1]).count += SEGMENT_CAPACITY;
    for (const { key, value } of this.withRoom.getRange()) entry(key[0], key[1]).count -= SEGMENT_CAPACITY - value;
    return out;
  }

  /** Replaces every count (inside the caller's write transaction). */
  putCounts(counts: Iterable<{ modelId: string; accountId: string; count: number }>): void {
    for (const key of [...this.counts.getKeys()]) this.counts.remove(key);
    for (const { modelId, accountId, count } of counts) if (count > 0) this.counts.put([modelId, accountId], count);
  }
}

/**
 * The value lmdb-js's getBinaryFast returns without copying: its reused read buffer, valid until the next
 * read, whose `length` property (set by lmdb-js) is the value's size while the typed array spans the whole
 * buffer; subarray makes a view of exactly the value (a copy per segment made a full rebuild measurably
 * slower: docs/benchmarks.md).
 */
export function sharedView(b: Buffer | undefined): Buffer | undefined {
  return b && b.subarray(0, b.length);
}
