// The in-memory search structure of one account's templates. LMDB stays the source of truth; a gallery is
// rebuilt from it at start and updated after every committed write. The interface is narrow and
// asynchronous so the SIMD index (src/similarity-index: a native collection per account, Promise-based) and the plain
// ScanGallery are interchangeable behind the services.
import { dot } from './dot';

export interface GalleryHit {
  personId: string;
  /** Cosine similarity (dot product of L2-normalised templates). */
  cosine: number;
}

export interface Gallery {
  readonly size: number;
  /** Adds or replaces the person's template. */
  upsert(personId: string, template: Float32Array): Promise<void>;
  remove(personId: string): Promise<boolean>;
  get(personId: string): Promise<Float32Array | undefined>;
  /** Cosine of the query with the person's template; undefined when the person is not in the gallery. */
  score(personId: string, query: Float32Array): Promise<number | undefined>;
  /** Up to topK hits with cosine >= floor, best first (ties by personId for determinism). */
  search(query: Float32Array, topK: number, floor: number): Promise<GalleryHit[]>;
}

/** Plain scan over float32 templates: O(n·d) per search, fine for thousands of persons. */
export class ScanGallery implements Gallery {
  private readonly templates = new Map<string, Float32Array>();

  /** `dimension`: template length; taken from the first template when not given. */
  constructor(private dimension?: number) {}

  get size(): number {
    return this.templates.size;
  }

  async upsert(personId: string, template: Float32Array): Promise<void> {
    this.dimension ??= template.length;
    if (template.length !== this.dimension) {
      throw new Error(`gallery: template of ${template.length} values, expected ${this.dimension}`);
    }
    this.templates.set(personId, Float32Array.from(template));
  }

  async remove(personId: string): Promise<boolean> {
    return this.templates.delete(personId);
  }

  async get(personId: string): Promise<Float32Array | undefined> {
    return this.templates.get(personId);
  }

  async score(personId: string, query: Float32Array): Promise<number | undefined> {
    const t = this.templates.get(personId);
    return t && dot(query, t);
  }

  async search(query: Float32Array, topK: number, floor: number): Promise<GalleryHit[]> {
    if (topK <= 0) return [];
    const hits: GalleryHit[] = [];
    for (const [personId, t] of this.templates) {
      const cosine = dot(query, t);
      if (cosine >= floor) hits.push({ personId, cosine });
    }
    hits.sort((a, b) => b.cosine - a.cosine || (a.personId < b.personId ? -1 : 1));
    return hits.slice(0, topK);
  }
}
