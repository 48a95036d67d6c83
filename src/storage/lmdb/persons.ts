// Persons per account. Keys are [accountId, personId], so accounts never share a record. Always written in
// one transaction: `persons` (metadata, model id and the template's segment), `templates` (segments of up to
// 32 templates of one model and account: ./segment-store.ts), `template-rows` (the same template alone, for
// the index's exact re-rank: ./template-rows.ts), `images` (the reference image, kept for `face-check
// reindex`) and the change log (./change-log.ts). Segments, rows and images are sealed (./crypto/sealer.ts).
import type { Database, RootDatabase } from 'lmdb';

import { ChangeLog } from './change-log';
import { countWithPrefix } from './key-prefix';
import { SegmentStore, sharedView, TEMPLATES_DB, type SegmentKey } from './segment-store';
import {
  type AccountPersonMeta, type CreateResult, IMAGES_DB, type PersonMeta, type PersonRecord, type TemplateBlock,
  type TemplateInput,
} from '../records';
import { TemplateRows, type PersonKey } from './template-rows';
import type { Sealer } from '../crypto/sealer';
import type { MapAdvice } from './map-advice';

export { TEMPLATES_DB, type SegmentKey };

export interface StoredPerson extends PersonMeta {
  modelId: string;
  /** Number of the template segment [modelId, accountId, segment] holding the template. */
  segment: number;
}

export type { PersonKey };

export class PersonRepository {
  private readonly root: RootDatabase;
  private readonly sealer: Sealer;
  private readonly records: Database<StoredPerson, PersonKey>;
  private readonly images: Database<Buffer, PersonKey>;
  readonly segments: SegmentStore;
  readonly rows: TemplateRows;
  /** Who changed, in commit order: the gallery snapshots catch up from it. */
  readonly changes: ChangeLog;

  /** `mapAdvice`: the store's (reads of many segments run under normal read-ahead advice); none in migrations. */
  constructor(root: RootDatabase, sealer: Sealer, private readonly mapAdvice?: MapAdvice) {
    this.root = root;
    this.sealer = sealer;
    this.records = root.openDB<StoredPerson, PersonKey>({ name: 'persons' });
    this.images = root.openDB<Buffer, PersonKey>({ name: IMAGES_DB, encoding: 'binary' });
    this.segments = new SegmentStore(root, sealer);
    this.rows = new TemplateRows(root, sealer);
    this.changes = new ChangeLog(root, root.openDB<unknown, string>({ name: 'meta' }));
  }

  /** The person without its template: what existence checks and person responses need (no segment read). */
  meta(accountId: string, personId: string): (PersonMeta & { modelId: string }) | undefined {
    const stored = this.records.get([accountId, personId]);
    return stored && { personId, created: stored.created, updated: stored.updated, modelId: stored.modelId };
  }

  get(accountId: string, personId: string): PersonRecord | undefined {
    const stored = this.records.get([accountId, personId]);
    if (!stored) return undefined;
    const template = this.segments.template([stored.modelId, accountId, stored.segment], personId);
    if (!template) throw new Error(`storage: template of ${accountId}/${personId} missing from its segment`);
    return { personId, created: stored.created, updated: stored.updated, modelId: stored.modelId, template };
  }

  /**
   * The stored float32 templates of `personIds` in order, undefined where the account has no such person
   * (synchronous, one sealed row each): the similarity index's exact re-rank of its int8 candidates.
   */
  templatesOf(accountId: string, personIds: readonly string[]): Array<Float32Array | undefined> {
    return this.rows.read(accountId, personIds);
  }

  referenceImage(accountId: string, personId: string): Buffer | undefined {
    const key: PersonKey = [accountId, personId];
    const sealed = sharedView(this.images.getBinaryFast(key));
    return sealed && this.sealer.open(IMAGES_DB, key, sealed);
  }

  /** Writes a new person unless the id exists (checked inside the write transaction). */
  async create(accountId: string, personId: string, input: TemplateInput, now: string): Promise<CreateResult> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      if (this.records.get(key) !== undefined) return { created: false } as const;
      const segment = this.segments.append(input.modelId, accountId, [{ personId, template: input.template }]).get(personId)!;
      this.records.put(key, { personId, created: now, updated: now, modelId: input.modelId, segment });
      this.rows.put(accountId, personId, input.template);
      this.putImage(key, input.referenceImage);
      this.changes.append(accountId, [personId]);
      const person: PersonRecord = { personId, created: now, updated: now, modelId: input.modelId, template: input.template };
      return { created: true, person } as const;
    });
  }

  /**
   * Creates many persons of one account in one transaction, filling segments whole (bulk import, storage
   * migration, benchmarks). Ids that exist are left alone and returned in `skipped`.
   */
  async createMany(accountId: string, persons: ReadonlyArray<{ personId: string } & TemplateInput>, now: string): Promise<{ created: number; skipped: string[] }> {
    return this.root.transaction(() => {
      const skipped: string[] = [];
      const byModel = new Map<string, Array<{ personId: string } & TemplateInput>>();
      const seen = new Set<string>();
      for (const p of persons) {
        if (seen.has(p.personId) || this.records.get([accountId, p.personId]) !== undefined) {
          skipped.push(p.personId);
          continue;
        }
        seen.add(p.personId);
        let list = byModel.get(p.modelId);
        if (!list) byModel.set(p.modelId, (list = []));
        list.push(p);
      }
      let created = 0;
      for (const [modelId, list] of byModel) {
        const placed = this.segments.append(modelId, accountId, list);
        for (const p of list) {
          const key: PersonKey = [accountId, p.personId];
          this.records.put(key, { personId: p.personId, created: now, updated: now, modelId, segment: placed.get(p.personId)! });
          this.rows.put(accountId, p.personId, p.template);
          this.putImage(key, p.referenceImage);
          created++;
        }
        this.changes.append(accountId, list.map((p) => p.personId));
      }
      return { created, skipped };
    });
  }

  /** Replaces template and reference image of an existing person; undefined when it does not exist. */
  async replace(accountId: string, personId: string, input: TemplateInput, now: string): Promise<PersonRecord | undefined> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.records.get(key);
      if (old === undefined) return undefined;
      const segment = this.segments.move(accountId, personId, old, input.modelId, input.template);
      this.records.put(key, { personId, created: old.created, updated: now, modelId: input.modelId, segment });
      this.rows.put(accountId, personId, input.template);
      this.putImage(key, input.referenceImage);
      this.changes.append(accountId, [personId]);
      return { personId, created: old.created, updated: now, modelId: input.modelId, template: input.template };
    });
  }

  /** Replaces only the template (reindex): created/updated stay, the person's reference data is unchanged. */
  async setTemplate(accountId: string, personId: string, modelId: string, template: Float32Array): Promise<boolean> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.records.get(key);
      if (old === undefined) return false;
      const segment = this.segments.move(accountId, personId, old, modelId, template);
      this.records.put(key, { ...old, modelId, segment });
      this.rows.put(accountId, personId, template);
      this.changes.append(accountId, [personId]);
      return true;
    });
  }

  /** Deletes the person, its template and its image; returns what was deleted, undefined when absent. */
  async remove(accountId: string, personId: string): Promise<PersonRecord | undefined> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.records.get(key);
      if (old === undefined) return undefined;
      const template = this.segments.remove(accountId, personId, old);
      this.records.remove(key);
      this.rows.remove(accountId, personId);
      this.images.remove(key);
      this.changes.append(accountId, [personId]);
      return { personId, created: old.created, updated: old.updated, modelId: old.modelId, template };
    });
  }

  /** Every person of every account, without templates (listing, reindex). */
  *all(): Generator<AccountPersonMeta> {
    for (const { key, value } of this.records.getRange()) {
      yield { accountId: key[0], personId: value.personId, created: value.created, updated: value.updated, modelId: value.modelId };
    }
  }

  /**
   * Every stored template of `modelId` (of one account when given), segment by segment in key order (an
   * account's segments are contiguous): the gallery rebuild copies `bytes` straight into the native index.
   * A segment is read from LMDB's shared buffer without a copy and decrypted once; copy `bytes` before
   * taking the next block.
   */
  templateBlocks(modelId: string, accountId?: string): Generator<TemplateBlock> {
    return this.scanned(this.segments.blocks(modelId, accountId));
  }

  /**
   * templateBlocks of each of `accountIds` in turn, as one scan: the map's advice changes once for all of
   * them (each change reads /proc/self/maps, ~0.1-0.3 ms: per account it would add up over many accounts).
   */
  templateBlocksOf(modelId: string, accountIds: readonly string[]): Generator<TemplateBlock> {
    const segments = this.segments;
    function* each(): Generator<TemplateBlock> {
      for (const accountId of accountIds) yield* segments.blocks(modelId, accountId);
    }
    return this.scanned(each());
  }

  private scanned(blocks: Generator<TemplateBlock>): Generator<TemplateBlock> {
    return this.mapAdvice ? this.mapAdvice.scan(blocks) : blocks;
  }

  /** The accounts holding templates of `modelId` (from segment keys alone). */
  accountsWithTemplates(modelId: string): string[] {
    return this.segments.accounts(modelId);
  }

  /** Templates of `modelId` in the account (from segment keys alone): what its gallery must hold. */
  templateCount(modelId: string, accountId: string): number {
    return this.segments.count(modelId, accountId);
  }

  count(accountId?: string): number {
    // The database's own entry count (O(1)); getCount() would walk every record (65 ms at 100k).
    if (accountId === undefined) return (this.records.getStats() as { entryCount: number }).entryCount;
    return countWithPrefix(this.records, [accountId]);
  }

  /**
   * Storage schema 1 kept each template inside its person record: moves them into segments, `batch` persons
   * per transaction (an interrupted run resumes: records already moved have a segment). Returns how many moved.
   * No template rows yet: this runs on the plain schema-1 values, and rows are made (sealed) by the later
   * migration to schema 4 (./template-rows-migration.ts).
   */
  async moveInlineTemplates(batch = 4096): Promise<number> {
    type V1Person = PersonMeta & { modelId: string; template?: Uint8Array; segment?: number };
    const v1 = this.records as unknown as Database<V1Person, PersonKey>;
    let moved = 0;
    let after: PersonKey | undefined;
    for (;;) {
      const work = [...v1.getRange({ ...(after ? { start: after } : {}), limit: batch + 1 })]
        .filter(({ key }) => !after || key[0] !== after[0] || key[1] !== after[1]).slice(0, batch);
      if (work.length === 0) return moved;
      after = work[work.length - 1].key;
      moved += await this.root.transaction(() => {
        const groups = new Map<string, { modelId: string; accountId: string; items: Array<{ key: PersonKey; value: V1Person; template: Float32Array }> }>();
        for (const { key, value } of work) {
          if (!value.template) continue;
          const bytes = new Uint8Array(value.template.byteLength);
          bytes.set(value.template);
          const g = `${value.modelId}\n${key[0]}`;
          let group = groups.get(g);
          if (!group) groups.set(g, (group = { modelId: value.modelId, accountId: key[0], items: [] }));
          group.items.push({ key, value, template: new Float32Array(bytes.buffer) });
        }
        let n = 0;
        for (const { modelId, accountId, items } of groups.values()) {
          const placed = this.segments.append(modelId, accountId, items.map((x) => ({ personId: x.key[1], template: x.template })));
          for (const { key, value } of items) {
            const { personId, created, updated } = value;
            this.records.put(key, { personId, created, updated, modelId, segment: placed.get(key[1])! });
            n++;
          }
          this.changes.append(accountId, items.map((x) => x.key[1]));
        }
        return n;
      });
    }
  }

  private putImage(key: PersonKey, image: Uint8Array): void {
    this.images.put(key, this.sealer.seal(IMAGES_DB, key, image));
  }
}
