// An account's gallery on the native SIMD index (src/index): the int8 scan with float32 re-rank answers
// identify and the duplicate check. The collection is created on the first template (its length is the
// dimension) under a name unique to this process's Galleries instance, so two services in one process
// (tests) never share persons.
import { similarityIndex, type Collection } from '../index/similarity-index';
import type { Gallery, GalleryHit } from './gallery';

export class IndexGallery implements Gallery {
  private collection: Collection | undefined;

  constructor(private readonly name: string) {}

  get size(): number {
    return this.collection?.size ?? 0;
  }

  private open(dimension: number): Collection {
    this.collection ??= similarityIndex().createCollection(this.name, dimension);
    return this.collection;
  }

  async upsert(personId: string, template: Float32Array): Promise<void> {
    await this.open(template.length).upsert(personId, template);
  }

  async remove(personId: string): Promise<boolean> {
    return this.collection ? this.collection.remove(personId) : false;
  }

  async get(personId: string): Promise<Float32Array | undefined> {
    return this.collection?.get(personId);
  }

  async score(personId: string, query: Float32Array): Promise<number | undefined> {
    if (!this.collection) return undefined;
    return (await this.collection.score(query, [personId]))[0];
  }

  async search(query: Float32Array, topK: number, floor: number): Promise<GalleryHit[]> {
    if (!this.collection || topK <= 0) return [];
    const hits = await this.collection.search(query, { k: topK, floor });
    return hits.map((h) => ({ personId: h.key, cosine: h.score }));
  }

  /**
   * Adds many templates in one native call (start-up rebuild from LMDB); `clear` first empties the gallery.
   * `templates` is read in place until the promise settles.
   */
  async load(personIds: readonly string[], templates: Float32Array, dimension: number, options: { clear?: boolean } = {}): Promise<void> {
    await this.open(dimension).bulkLoad(templates, personIds, { clear: options.clear ?? false });
  }

  /** Frees the native collection. */
  drop(): void {
    if (this.collection) similarityIndex().dropCollection(this.name);
    this.collection = undefined;
  }
}
