// An account's gallery on the native SIMD index (src/similarity-index): answers identify, the duplicate check and
// verify. The collection is created on the first template (its length is the dimension) under a name
// unique to this process's Galleries instance, so two services in one process (tests) never share persons.
//
// Two ways to get exact float32 scores:
// - without a TemplateSource the index keeps a float32 copy of every template and re-ranks its int8
//   candidates itself (~3.9 KB per 704-value template);
// - with a TemplateSource (the store's own copy of the templates) the index keeps only the int8 rows
//   (~0.8 KB per template): a search asks it for the best candidatesFor(topK) rows by the int8 estimate,
//   fetches those templates from the source and scores them exactly in float32 (the same normalisation and
//   kernel as the index, so the scores equal the other mode's). A candidate the source does not return is
//   dropped; score and get read the source.
import {
  IndexError, similarityIndex, type CodeDump, type Collection, type SealedImportResult, type SealedJob, type SealedLoadResult,
  type SealedTemplates,
} from '../similarity-index/similarity-index';
import type { Gallery, GalleryHit } from './gallery';

export type { CodeDump } from '../similarity-index/similarity-index';

/** The stored (L2-normalised) float32 templates of these persons, undefined for unknown ones, in order. */
export type TemplateSource = (
  personIds: readonly string[],
) => Promise<ReadonlyArray<Float32Array | undefined>> | ReadonlyArray<Float32Array | undefined>;

/**
 * int8 candidates re-scored per search when the templates come from a source. Each costs one template
 * fetch (from the store: an AES-256-GCM open of 2.8 KB) and an exact score, so fewer is faster. At
 * 1M clustered templates with near-duplicates, recall@1 and recall@10 against float32 brute force are 100 %
 * from 16 candidates for a top 10 (the int8 order alone: recall@10 ~98 %); this asks for twice that at
 * least, 4 per result beyond (bench:index prints recall by candidate count).
 */
export function candidatesFor(topK: number): number {
  return Math.max(32, 4 * topK);
}

function byScoreThenId(a: GalleryHit, b: GalleryHit): number {
  return b.cosine - a.cosine || (a.personId < b.personId ? -1 : a.personId > b.personId ? 1 : 0);
}

export class IndexGallery implements Gallery {
  private collection: Collection | undefined;

  constructor(
    private readonly name: string,
    private readonly templates?: TemplateSource,
  ) {}

  get size(): number {
    return this.collection?.size ?? 0;
  }

  private open(dimension: number): Collection {
    this.collection ??= similarityIndex().createCollection(this.name, dimension, { vectors: !this.templates });
    return this.collection;
  }

  async upsert(personId: string, template: Float32Array): Promise<void> {
    await this.open(template.length).upsert(personId, template);
  }

  async remove(personId: string): Promise<boolean> {
    return this.collection ? this.collection.remove(personId) : false;
  }

  async get(personId: string): Promise<Float32Array | undefined> {
    if (this.templates) return (await this.fetch([personId]))[0];
    return this.collection?.get(personId);
  }

  async score(personId: string, query: Float32Array): Promise<number | undefined> {
    if (this.templates) {
      const template = (await this.fetch([personId]))[0];
      if (!template) return undefined;
      const s = this.exactScores(query, [template])[0];
      return Number.isNaN(s) ? undefined : s;
    }
    if (!this.collection) return undefined;
    return (await this.collection.score(query, [personId]))[0];
  }

  async search(query: Float32Array, topK: number, floor: number): Promise<GalleryHit[]> {
    if (!this.collection || topK <= 0) return [];
    if (!this.templates) {
      const hits = await this.collection.search(query, { k: topK, floor });
      return hits.map((h) => ({ personId: h.key, cosine: h.score }));
    }
    const candidates = await this.collection.search(query, { k: candidatesFor(topK), floor });
    const ids = candidates.map((h) => h.key);
    return this.rerank(query, ids, await this.fetch(ids), topK, floor);
  }

  /** search() for many queries in one pass over the gallery (one source call for all their candidates). */
  async searchBatch(queries: readonly Float32Array[], topK: number, floor: number): Promise<GalleryHit[][]> {
    if (!this.collection || topK <= 0 || queries.length === 0) return queries.map(() => []);
    if (!this.templates) {
      const all = await this.collection.searchBatch(queries, { k: topK, floor });
      return all.map((hits) => hits.map((h) => ({ personId: h.key, cosine: h.score })));
    }
    const all = await this.collection.searchBatch(queries, { k: candidatesFor(topK), floor });
    const ids = [...new Set(all.flatMap((hits) => hits.map((h) => h.key)))];
    const fetched = await this.fetch(ids);
    const byId = new Map(ids.map((id, i) => [id, fetched[i]]));
    return all.map((hits, j) => {
      const keys = hits.map((h) => h.key);
      return this.rerank(queries[j], keys, keys.map((k) => byId.get(k)), topK, floor);
    });
  }

  /**
   * Adds many templates in one native call (start-up rebuild from LMDB); `clear` first empties the gallery.
   * `templates` is read in place until the promise settles.
   */
  async load(personIds: readonly string[], templates: Float32Array, dimension: number, options: { clear?: boolean } = {}): Promise<void> {
    await this.open(dimension).bulkLoad(templates, personIds, { clear: options.clear ?? false });
  }

  /**
   * Adds many sealed templates of `dimension` values, opened natively with `key` straight into the index's
   * rows (Collection.loadSealed: a PostgreSQL node's start-up build). Resolves with the lowest row that did
   * not open, if any, and then loads nothing.
   */
  async loadSealed(batch: SealedTemplates, dimension: number, key: Uint8Array): Promise<SealedLoadResult> {
    const collection = this.open(dimension);
    if (collection.dim !== dimension) {
      throw new IndexError('ERR_INDEX_DIM_MISMATCH', 'FieldsValidation', `templates of ${dimension} values for a gallery of ${collection.dim}`);
    }
    return collection.loadSealed(batch, key);
  }

  /** The index's int8 rows (for a snapshot), or undefined when the gallery has no collection yet. */
  async exportCodes(): Promise<CodeDump | undefined> {
    return this.collection?.exportCodes();
  }

  /**
   * Loads a snapshot taken by exportCodes (no re-quantisation), creating the collection if needed; `clear`
   * replaces the content, otherwise the dump's persons are added or replaced. Only a gallery with a
   * TemplateSource can take one (the dump has no float32 templates). A dump of another layout or
   * dimension, or with a wrong size, rejects with ERR_INDEX_BAD_ARGUMENT and loads nothing.
   */
  async importCodes(dump: CodeDump, options: { clear?: boolean } = {}): Promise<void> {
    if (!this.templates) {
      throw new IndexError('ERR_INDEX_BAD_ARGUMENT', 'FieldsValidation', 'importCodes needs a gallery with a template source');
    }
    await this.open(dump.dim).importCodes(dump, { clear: options.clear ?? false });
  }

  /**
   * Replaces the content with a sealed snapshot's rows of `dim`-value templates, read and opened natively
   * (Collection.importSealed), creating the collection if needed. Like importCodes, only with a TemplateSource.
   */
  async importSealed(dim: number, job: SealedJob, options: { threads?: number } = {}): Promise<SealedImportResult> {
    if (!this.templates) {
      throw new IndexError('ERR_INDEX_BAD_ARGUMENT', 'FieldsValidation', 'importSealed needs a gallery with a template source');
    }
    return this.open(dim).importSealed(job, options);
  }

  /**
   * Replaces the content with `collection`'s rows, which become this gallery's own (a snapshot imported
   * before the galleries existed: ./snapshot/early-import.ts); the previous collection is freed.
   */
  adopt(collection: Collection): void {
    if (collection.name === this.collection?.name) return;
    this.drop();
    this.collection = collection;
  }

  /** Frees the native collection. */
  drop(): void {
    if (this.collection) similarityIndex().dropCollection(this.collection.name);
    this.collection = undefined;
  }

  private async fetch(personIds: readonly string[]): Promise<ReadonlyArray<Float32Array | undefined>> {
    if (personIds.length === 0) return [];
    const got = await this.templates!(personIds);
    if (got.length !== personIds.length) {
      throw new Error(`gallery ${this.name}: the template source returned ${got.length} templates for ${personIds.length} persons`);
    }
    return got;
  }

  /** Exact float32 cosines of the query with the given templates (the index's normalisation and kernel). */
  private exactScores(query: Float32Array, templates: readonly Float32Array[]): Float32Array {
    const dim = query.length;
    const packed = new Float32Array(templates.length * dim);
    templates.forEach((t, i) => {
      if (t.length !== dim) throw new Error(`gallery ${this.name}: a stored template has ${t.length} values, expected ${dim}`);
      packed.set(t, i * dim);
    });
    return similarityIndex().cosines(query, packed);
  }

  /** The candidates the source returned, scored exactly, ordered by score then personId, floor, topK. */
  private rerank(query: Float32Array, ids: readonly string[], templates: ReadonlyArray<Float32Array | undefined>, topK: number, floor: number): GalleryHit[] {
    const present: string[] = [];
    const rows: Float32Array[] = [];
    ids.forEach((id, i) => {
      const t = templates[i];
      if (t) {
        present.push(id);
        rows.push(t);
      }
    });
    const scores = this.exactScores(query, rows);
    const hits: GalleryHit[] = [];
    present.forEach((personId, i) => {
      if (scores[i] >= floor) hits.push({ personId, cosine: scores[i] });  // NaN (a non-finite template) fails too
    });
    hits.sort(byScoreThenId);
    return hits.slice(0, topK);
  }
}
