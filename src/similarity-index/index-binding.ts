// The native similarity index's binding as TypeScript sees it: the addon's `index` export, the shapes it takes
// and returns, and its errors (IndexError, with the error table's row name). The Promise API over it is
// ./similarity-index.ts.
import { native } from '../native';

export type KernelName = 'scalar' | 'avx2' | 'avx512' | 'avx512vnni' | 'neon';

export type IndexErrorCode =
  | 'ERR_INDEX_BAD_ARGUMENT'
  | 'ERR_INDEX_NO_COLLECTION'
  | 'ERR_INDEX_DIM_MISMATCH'
  | 'ERR_INDEX_KEY_EXISTS'
  | 'ERR_INDEX_KEY_NOT_FOUND'
  | 'ERR_INDEX_OUT_OF_MEMORY'
  | 'ERR_INDEX_INTERNAL';

/**
 * What was wrong with a sealed snapshot file that importSealed refused: a chunk's tag does not verify ('open'),
 * the file ends early ('cut'), a chunk's rows or sizes differ from the header ('format'), it cannot be read
 * ('read'), or this process cannot open AES-256-GCM natively ('unavailable').
 */
export type SealedFault = 'open' | 'cut' | 'format' | 'read' | 'unavailable';

/**
 * A failure reported by the index: `code` says which, `status` is the error-table row name; `reason` is set
 * when importSealed refused the file itself.
 */
export class IndexError extends Error {
  constructor(
    readonly code: IndexErrorCode,
    readonly status: string,
    message: string,
    readonly reason?: SealedFault,
  ) {
    super(message);
    this.name = 'IndexError';
  }
}

export interface SearchHit {
  key: string;
  /** float32 cosine similarity in [-1, 1]. */
  score: number;
}

export interface SearchOptions {
  /** Results per query (>= 1); default 10. */
  k?: number;
  /** Drop hits whose cosine is below this; default none. */
  floor?: number;
  /** Scan threads: 0 (default) = automatic, partitioned scan on big galleries; 1 = single thread. */
  threads?: number;
  /** Candidates re-scored in float32 per query; default max(64, 4k). Ignored without vectors. */
  rerank?: number;
  /** Force a kernel for this call (tests, benchmarks); default: the one chosen at load. */
  kernel?: KernelName;
}

export interface CollectionOptions {
  /**
   * Keep the float32 templates (default true): search re-scores its candidates itself and get, score and
   * exactSearchBatch work. false: only the int8 rows (~0.8 KB instead of ~3.9 KB per 704-value template);
   * search returns the top k by the int8 estimate with estimated cosines (a floor drops only rows whose
   * float32 cosine cannot reach it), get/score/exactSearchBatch reject with ERR_INDEX_BAD_ARGUMENT.
   */
  vectors?: boolean;
}

/**
 * The int8 rows of a collection in row order (exportCodes/importCodes): a start-up loads them without
 * re-quantising. `layout` names the row format and its version; a dump of another layout is refused.
 */
export interface CodeDump {
  layout: string;
  dim: number;
  /** Bytes of codes per row (dim rounded up to 64, zero padded). */
  stride: number;
  count: number;
  /** The row keys joined by '\0', in row order. */
  keys: string;
  /** count * stride bytes (int8 codes as bytes). */
  codes: Uint8Array;
  /** Per row: code * scale ~ value of the normalised template. */
  scales: Float32Array;
  /** Per row: the sum of its codes. */
  sums: Int32Array;
}

/**
 * A sealed snapshot file's chunks, for importSealed (src/matching/snapshot/read.ts makes it from the file's
 * header; docs/index-snapshot.md describes the format): chunk i is AES-256-GCM ciphertext and its 16-byte tag
 * at [offset, offset + length) of the open descriptor `fd`, holding `rows` rows.
 */
export interface SealedJob {
  fd: number;
  /** The file's 32-byte key (copied by the call). */
  key: Uint8Array;
  stride: number;
  /** Rows in all. */
  count: number;
  chunks: Array<{ offset: number; length: number; rows: number; nonce: Uint8Array; aad: Uint8Array }>;
}

/** What an importSealed did: rows loaded, threads used, and their busy times summed (ms). */
export interface SealedImportResult {
  added: number;
  threads: number;
  /** Reading the chunks (pread). */
  readMs: number;
  /** Opening them (AES-256-GCM) into the index's rows, each row checked. */
  openMs: number;
  /** The key map. */
  keyMs: number;
}

/**
 * Sealed templates to load (loadSealed): row i, for keys[i], is the sealed value
 * sealed[sealedOffsets[i] … sealedOffsets[i + 1]) (src/storage/crypto/aead.ts's format) with its additional
 * data aad[aadOffsets[i] … aadOffsets[i + 1]).
 */
export interface SealedTemplates {
  keys: readonly string[];
  sealed: Uint8Array;
  sealedOffsets: Uint32Array;
  aad: Uint8Array;
  aadOffsets: Uint32Array;
}

/** What a loadSealed did: the rows added or replaced, or the lowest row that did not open (nothing loaded). */
export interface SealedLoadResult extends BulkLoadResult {
  /** -1 when every row opened and was loaded. */
  failedRow: number;
  /** Why failedRow did not open, as openSealedBatch says it (src/storage/crypto/sealed-batch.ts). */
  reason: 'short' | 'version' | 'tag' | 'size' | '';
  /** 'short': the sealed value's length; 'size': its plain length. */
  bytes: number;
  /** 'version': the version byte found. */
  version: number;
}

export interface BulkLoadOptions {
  /** Replace the whole collection (default false: add/replace the given keys). */
  clear?: boolean;
  /** Threads for normalising/quantising; 0 (default) = all cores. */
  threads?: number;
}

export interface BulkLoadResult {
  added: number;
  replaced: number;
}

export interface CollectionStats {
  size: number;
  dim: number;
  /** Bytes of int8 codes per template (dim rounded up to 64). */
  codeStride: number;
  /** Bytes of row storage allocated (codes, float32 templates, scales). */
  bytesAllocated: number;
  /** Estimated bytes of the key strings and the key map. */
  bytesKeys: number;
  /** Whether the float32 templates are kept (CollectionOptions.vectors). */
  vectors: boolean;
}

export interface NativeHits {
  keys: string[];
  scores: Float32Array;
}

/** The addon's `index` export (native/addon/index_binding.cpp). */
export interface IndexBinding {
  kernels(): string[];
  activeKernel(): string;
  kernelNote(): string;
  createCollection(name: string, dim: number, options?: CollectionOptions): boolean;
  dropCollection(name: string): boolean;
  listCollections(): string[];
  size(name: string): number;
  stats(name: string): CollectionStats;
  write(name: string, key: string, template: Float32Array, mode: 'insert' | 'replace' | 'upsert'): Promise<boolean>;
  remove(name: string, key: string): Promise<boolean>;
  clear(name: string): Promise<void>;
  /** keys: one per template, or all of them joined by '\0'. */
  bulkLoad(name: string, templates: Float32Array, keys: string[] | string, clear: boolean, threads: number): Promise<BulkLoadResult>;
  loadSealedTemplates(name: string, key: Uint8Array, sealed: Uint8Array, sealedOffsets: Uint32Array, aad: Uint8Array,
    aadOffsets: Uint32Array, keys: string[] | string, threads: number): Promise<SealedLoadResult>;
  search(name: string, queries: Float32Array, options?: SearchOptions): Promise<NativeHits[]>;
  exactSearch(name: string, queries: Float32Array, options?: SearchOptions): Promise<NativeHits[]>;
  get(name: string, key: string): Promise<Float32Array | null>;
  score(name: string, query: Float32Array, keys: string[]): Promise<Float32Array>;
  /** Cosines of the query with m templates (m * dim), normalised and scored as score() does; NaN for a non-finite template. */
  scoreTemplates(query: Float32Array, templates: Float32Array): Float32Array;
  exportCodes(name: string): Promise<CodeDump>;
  importCodes(name: string, dump: CodeDump, clear: boolean, threads: number): Promise<BulkLoadResult>;
  /** Rejections caused by the file carry `reason` (a SealedFault). */
  importSealed(name: string, job: SealedJob, threads: number): Promise<SealedImportResult>;
  sealedImportAvailable(): { available: boolean; reason: string };
  streamCodes(name: string, threads: number, kernel?: KernelName): Promise<{ seconds: number; bytes: number }>;
  dotI8(kernel: KernelName | undefined, a: Int8Array, b: Int8Array): number;
  dotF32(kernel: KernelName | undefined, a: Float32Array, b: Float32Array): number;
  scanI8(kernel: KernelName | undefined, queries: Int8Array, rows: Int8Array, dim: number): Int32Array;
  quantise(templates: Float32Array, dim: number): { codes: Int8Array; scales: Float32Array };
}

/** The index binding of the loaded addon. */
export function loadIndexBinding(): IndexBinding {
  const binding = native.index as IndexBinding | undefined;
  if (!binding || typeof binding.createCollection !== 'function') {
    throw new Error('the native addon has no similarity index (rebuild it: npm run build:native)');
  }
  return binding;
}

export function toIndexError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof code === 'string' && code.startsWith('ERR_INDEX_')) {
    const { status, reason } = err as { status?: unknown; reason?: unknown };
    return new IndexError(code as IndexErrorCode, typeof status === 'string' ? status : 'Internal', err.message,
      typeof reason === 'string' ? reason as SealedFault : undefined);
  }
  return err;
}
