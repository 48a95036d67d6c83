// Promise API over the native SIMD similarity index (native/core/index).
//
// An exact cosine index per named collection (one per account): int8 codes scanned by the best SIMD
// kernel of the CPU (AVX-512 VNNI / AVX-512 / AVX2 / NEON / scalar), the best candidates re-scored in
// float32, so the returned scores are float32 cosines of the L2-normalised templates. Templates and
// queries are normalised by the index. Equal scores are ordered by key (code point order).
// A collection made with `{ vectors: false }` keeps only the int8 rows (a quarter of the memory): its
// search returns the best rows by the int8 estimate, which the caller re-scores from its own templates
// (IndexGallery with a TemplateSource); its int8 rows can be exported and imported (snapshots).
// Searches and writes run off the event loop; searches run in parallel with each other and a write
// waits for the searches in flight. The index is a cache: rebuild it from LMDB at start with bulkLoad.
import {
  IndexError, loadIndexBinding, toIndexError,
  type BulkLoadOptions, type BulkLoadResult, type CodeDump, type CollectionOptions, type CollectionStats,
  type IndexBinding, type KernelName, type NativeHits, type SealedImportResult, type SealedJob, type SealedLoadResult,
  type SealedTemplates, type SearchHit, type SearchOptions,
} from './index-binding';
import { checkOffsets } from '../storage/crypto/sealed-batch';

export * from './index-binding';

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toIndexError(err);
  }
}

function asFloat32(v: Float32Array | readonly number[]): Float32Array {
  return v instanceof Float32Array ? v : Float32Array.from(v);
}

function hits(h: NativeHits): SearchHit[] {
  const out: SearchHit[] = new Array(h.keys.length);
  for (let i = 0; i < h.keys.length; i++) out[i] = { key: h.keys[i], score: h.scores[i] };
  return out;
}

/** One named collection. Handles are cheap; all state is in the native registry. */
export class Collection {
  constructor(
    private readonly binding: IndexBinding,
    readonly name: string,
    readonly dim: number,
  ) {}

  /** Templates in the collection (0 once the collection is dropped). */
  get size(): number {
    try {
      return this.binding.size(this.name);
    } catch {
      return 0;
    }
  }

  stats(): CollectionStats {
    try {
      return this.binding.stats(this.name);
    } catch (err) {
      throw toIndexError(err);
    }
  }

  /** Adds a template; rejects with ERR_INDEX_KEY_EXISTS if the key is present. */
  add(key: string, template: Float32Array | readonly number[]): Promise<void> {
    return call(async () => {
      await this.binding.write(this.name, key, asFloat32(template), 'insert');
    });
  }

  /** Replaces a key's template; rejects with ERR_INDEX_KEY_NOT_FOUND if the key is absent. */
  update(key: string, template: Float32Array | readonly number[]): Promise<void> {
    return call(async () => {
      await this.binding.write(this.name, key, asFloat32(template), 'replace');
    });
  }

  /** Adds or replaces; resolves true when the key was added. */
  upsert(key: string, template: Float32Array | readonly number[]): Promise<boolean> {
    return call(() => this.binding.write(this.name, key, asFloat32(template), 'upsert'));
  }

  /** Removes the key (its row is zeroed and its slot reused); resolves false when it was absent. */
  remove(key: string): Promise<boolean> {
    return call(() => this.binding.remove(this.name, key));
  }

  clear(): Promise<void> {
    return call(() => this.binding.clear(this.name));
  }

  /** Whether the collection keeps the float32 templates. */
  get hasVectors(): boolean {
    return this.stats().vectors;
  }

  /** The stored (normalised) template, or undefined. */
  get(key: string): Promise<Float32Array | undefined> {
    return call(async () => (await this.binding.get(this.name, key)) ?? undefined);
  }

  /**
   * Top-k hits for one query, best first. Without vectors: the top k by the int8 estimate, with estimated
   * cosines (within ~1e-2 of the float32 ones).
   */
  search(query: Float32Array | readonly number[], options: SearchOptions = {}): Promise<SearchHit[]> {
    return call(async () => {
      const q = asFloat32(query);
      if (q.length !== this.dim) throw new TypeError(`query has ${q.length} values, expected ${this.dim}`);
      return hits((await this.binding.search(this.name, q, options))[0]);
    });
  }

  /** Top-k hits for many queries in one pass over the gallery (a Float32Array of n * dim, or n arrays). */
  searchBatch(queries: Float32Array | readonly Float32Array[], options: SearchOptions = {}): Promise<SearchHit[][]> {
    return call(async () => {
      const flat = queries instanceof Float32Array ? queries : concat(queries, this.dim);
      if (flat.length === 0) return [];
      return (await this.binding.search(this.name, flat, options)).map(hits);
    });
  }

  /** The same answer from a plain float32 brute force (reference for tests and recall measurements). */
  exactSearchBatch(queries: Float32Array | readonly Float32Array[], options: SearchOptions = {}): Promise<SearchHit[][]> {
    return call(async () => {
      const flat = queries instanceof Float32Array ? queries : concat(queries, this.dim);
      if (flat.length === 0) return [];
      return (await this.binding.exactSearch(this.name, flat, options)).map(hits);
    });
  }

  /** Float32 cosine between the query and each key's template (undefined for absent keys): 1:1 verify. */
  score(query: Float32Array | readonly number[], keys: readonly string[]): Promise<(number | undefined)[]> {
    return call(async () => {
      const s = await this.binding.score(this.name, asFloat32(query), [...keys]);
      return Array.from(s, (v) => (Number.isNaN(v) ? undefined : v));
    });
  }

  /**
   * Loads many templates in one native call (e.g. the whole collection from LMDB at start):
   * `templates` holds keys.length * dim floats, row i for keys[i]. A key repeated in the batch keeps the
   * last template. The array is read in place: leave it unchanged until the promise settles.
   */
  bulkLoad(templates: Float32Array, keys: readonly string[], options: BulkLoadOptions = {}): Promise<BulkLoadResult> {
    return call(() => {
      // One joined string crosses into the addon much faster than a million small ones.
      const joined = keys.length > 1000 && !keys.some((k) => k.includes('\0')) ? keys.join('\0') : undefined;
      return this.binding.bulkLoad(this.name, templates, joined ?? (keys as string[]), options.clear ?? false, options.threads ?? 0);
    });
  }

  /**
   * Loads sealed templates opened natively with the 32-byte `key`, each deciphered straight into the row
   * that keeps it (no unsealed copy of the batch), with bulkLoad's upsert semantics, on `threads` threads (0,
   * the default: as bulkLoad chooses). When a row does not open, nothing is loaded and the result names the
   * lowest such row (failedRow) as openSealedBatch would. Only where the addon can open sealed values
   * (sealedBatchAvailable). The arrays are read in place and the key copied: leave the arrays unchanged
   * until the promise settles.
   */
  loadSealed(batch: SealedTemplates, key: Uint8Array, options: { threads?: number } = {}): Promise<SealedLoadResult> {
    const rows = batch.keys.length;
    if (key.byteLength !== 32) throw new RangeError('loadSealed: the key is not 32 bytes');
    checkOffsets('sealedOffsets', batch.sealedOffsets, rows, batch.sealed.byteLength);
    checkOffsets('aadOffsets', batch.aadOffsets, rows, batch.aad.byteLength);
    return call(() => {
      const joined = batch.keys.some((k) => k.includes('\0')) ? undefined : batch.keys.join('\0');
      return this.binding.loadSealedTemplates(this.name, key, batch.sealed, batch.sealedOffsets, batch.aad, batch.aadOffsets,
        joined ?? [...batch.keys], options.threads ?? 0);
    });
  }

  /** A copy of the int8 rows in row order, taken under the read lock off the event loop. */
  exportCodes(): Promise<CodeDump> {
    return call(() => this.binding.exportCodes(this.name));
  }

  /**
   * Loads rows exported by exportCodes (bulkLoad semantics: `clear` replaces the content, otherwise keys are
   * added or replaced); only into a collection without vectors. Every size, the layout and every row are
   * checked first: a bad dump rejects with ERR_INDEX_BAD_ARGUMENT and changes nothing. The arrays are read
   * in place: leave them unchanged until the promise settles.
   */
  importCodes(dump: CodeDump, options: BulkLoadOptions = {}): Promise<BulkLoadResult> {
    return call(() => this.binding.importCodes(this.name, dump, options.clear ?? false, options.threads ?? 0));
  }

  /**
   * Replaces the content with a sealed snapshot's rows, read from its descriptor and opened natively on
   * `threads` threads (0, the default: all cores) straight into the index's memory; only into a collection
   * without vectors, only where SimilarityIndex.sealedImport says it is available. Every chunk's tag and
   * every row are checked before any row is visible: a failure changes nothing and rejects with an
   * IndexError whose `reason` says when the file was at fault. Keep `job.fd` open until the promise settles.
   */
  importSealed(job: SealedJob, options: { threads?: number } = {}): Promise<SealedImportResult> {
    return call(() => this.binding.importSealed(this.name, job, options.threads ?? 0));
  }
}

function concat(rows: readonly Float32Array[], dim: number): Float32Array {
  const out = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => {
    if (r.length !== dim) throw new IndexError('ERR_INDEX_BAD_ARGUMENT', 'FieldsValidation', `query ${i} has ${r.length} values, expected ${dim}`);
    out.set(r, i * dim);
  });
  return out;
}

/** The process-wide index: named collections of templates. */
export class SimilarityIndex {
  constructor(private readonly binding: IndexBinding = loadIndexBinding()) {}

  /** The kernel chosen at load (FACE_CHECK_SIMD=scalar|avx2|avx512|avx512vnni|neon forces one). */
  get kernel(): KernelName {
    return this.binding.activeKernel() as KernelName;
  }

  /** Kernels this CPU can run, best last. */
  get kernels(): KernelName[] {
    return this.binding.kernels() as KernelName[];
  }

  /** Why FACE_CHECK_SIMD was ignored ('' when honoured or unset). */
  get kernelNote(): string {
    return this.binding.kernelNote();
  }

  /**
   * Creates the collection, or returns the existing one (ERR_INDEX_DIM_MISMATCH if its dim differs,
   * ERR_INDEX_BAD_ARGUMENT if it was made with the other `vectors` choice).
   */
  createCollection(name: string, dim = 512, options: CollectionOptions = {}): Collection {
    try {
      this.binding.createCollection(name, dim, options);
    } catch (err) {
      throw toIndexError(err);
    }
    return new Collection(this.binding, name, dim);
  }

  /** The existing collection, or undefined. */
  collection(name: string): Collection | undefined {
    try {
      return new Collection(this.binding, name, this.binding.stats(name).dim);
    } catch {
      return undefined;
    }
  }

  /** Drops the collection and frees its memory (after searches in flight finish). */
  dropCollection(name: string): boolean {
    return this.binding.dropCollection(name);
  }

  collectionNames(): string[] {
    return this.binding.listCollections();
  }

  /**
   * Cosines of a query with m templates (m * dim), both normalised by the index and multiplied with the
   * active kernel: the scores a collection with vectors would give. NaN for a non-finite template.
   * Synchronous: meant for the few dozen candidates of one search.
   */
  cosines(query: Float32Array, templates: Float32Array): Float32Array {
    try {
      return this.binding.scoreTemplates(query, templates);
    } catch (err) {
      throw toIndexError(err);
    }
  }

  /**
   * Whether Collection.importSealed works in this process: it opens AES-256-GCM with the OpenSSL functions
   * of the running node (looked up at run time and checked on a known answer); `reason` says why not.
   */
  get sealedImport(): { available: boolean; reason: string } {
    if (typeof this.binding.sealedImportAvailable !== 'function') return { available: false, reason: 'the addon has no importSealed' };
    return this.binding.sealedImportAvailable();
  }

  /** Float32 dot product with the active kernel: the cosine of two L2-normalised templates (compare). */
  dot(a: Float32Array, b: Float32Array): number {
    if (a.length !== b.length) throw new IndexError('ERR_INDEX_BAD_ARGUMENT', 'FieldsValidation', `templates of ${a.length} and ${b.length} values`);
    return this.binding.dotF32(undefined, a, b);
  }

  /** Low-level hooks for tests and benchmarks. */
  get native(): IndexBinding {
    return this.binding;
  }
}

let shared: SimilarityIndex | undefined;

/** The shared SimilarityIndex of the process (collections live in the addon, so there is one registry). */
export function similarityIndex(): SimilarityIndex {
  shared ??= new SimilarityIndex();
  return shared;
}
