// Exact (brute-force) cosine similarity index over L2-normalised float templates, one collection per account.
//
// Storage per template: int8 codes (per-vector scale = max|x| / 127, rows padded to 64 bytes), the code sum
// (for the VNNI kernel), the person key and, unless the collection is made without vectors, the normalised
// float32 template. A search scans the int8 codes with the run-time chosen SIMD kernel, keeps the best
// `rerank` candidates per query, re-scores them in float32 and returns the top k, so the scores are float32
// cosines. A collection without vectors (a quarter of the memory) returns the top k by the int8 estimate
// with the estimated cosines; the caller re-scores them from its own copy of the templates.
// Equal scores are ordered by key (UTF-8 byte order, i.e. code point order), in the int8 candidate selection
// as well as in the final ranking, so results do not depend on slot layout or thread partitioning.
//
// Slots are dense: a remove moves the last row into the hole and zeroes the vacated row, so nothing of a
// removed template stays in memory and the scan has no holes to skip.
//
// Concurrency: searches share the collection lock and run in parallel; writes take it exclusively and wait
// for running searches; a waiting write stops new searches from starting (no writer starvation). A search
// never sees a half-written row. A bulk load with `clear` builds the new rows outside the lock and swaps
// them in, so searches go on meanwhile.
//
// Pure C++ (no Node-API); no exception leaves this API: every call returns an IndexResult.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/index/key_table.h"
#include "core/index/kernels.h"

namespace facecheck::crypto {
struct SealedBatch;
struct SealedBatchResult;
}  // namespace facecheck::crypto

namespace facecheck::index {

enum class IndexCode : int {
  Ok,
  BadArgument,
  NoCollection,
  DimMismatch,
  KeyExists,
  KeyNotFound,
  OutOfMemory,
  Internal,
};

// "ERR_INDEX_BAD_ARGUMENT", ... (stable names for the JS side).
const char* indexCodeName(IndexCode code);
// The service-level status for an index failure (core/status.h).
Status toStatus(IndexCode code);

struct IndexResult {
  IndexCode code = IndexCode::Ok;
  std::string detail;
  bool ok() const { return code == IndexCode::Ok; }
  static IndexResult fail(IndexCode c, std::string d) { return IndexResult{c, std::move(d)}; }
  Result toResult() const { return ok() ? Result{} : Result::fail(toStatus(code), detail); }
};

enum class WriteMode { Insert, Replace, Upsert };

struct SearchOptions {
  size_t k = 10;
  // Results with a float32 cosine below this are dropped. Without vectors: rows whose int8 estimate is below
  // the floor minus the proven bound of the int8 error are dropped (none whose float32 cosine reaches it).
  float floor = -std::numeric_limits<float>::infinity();
  // Scan threads: 0 = automatic (partitioned scan when the gallery is big), otherwise at most this many.
  unsigned threads = 0;
  // Candidates re-scored in float32 per query: 0 = automatic (max(64, 4k)); never fewer than k.
  size_t rerank = 0;
  // Kernel for this call (tests and benchmarks); nullptr = activeKernel().
  const Kernel* kernel = nullptr;
};

struct Hit {
  std::string key;
  float score;
};

struct BulkStats {
  size_t added = 0;
  size_t replaced = 0;
};

struct CollectionStats {
  size_t size = 0;
  size_t dim = 0;
  size_t codeStride = 0;     // bytes of int8 codes per row
  size_t bytesAllocated = 0;  // chunk memory (codes, floats, scales, code sums)
  size_t bytesKeys = 0;       // estimate of the key strings and the key map
  bool vectors = true;        // whether the float32 templates are kept
};

// Name and version of the row format exportCodes/importCodes exchange: int8 codes of the normalised
// template, scale = max|x| / 127 (code * scale ~ value), rounded half away from zero, zero padded to the
// stride, and the int32 sum of the codes. Another format is refused.
constexpr const char* kCodeLayout = "int8-rowscale-v1";

// The rows of a collection in row order (exportCodes). The three arrays live in `memory`, which the
// holder keeps for as long as it uses them (the addon hands them to JS without copying).
struct CodeExport {
  size_t count = 0;
  std::string keys;         // joined by '\0'
  int8_t* codes = nullptr;  // count x stride
  float* scales = nullptr;  // count
  int32_t* sums = nullptr;  // count
  std::shared_ptr<void> memory;
};

// Rows to load (importCodes), borrowed from the caller for the duration of the call.
struct CodeRows {
  size_t count = 0;
  size_t stride = 0;
  std::vector<std::string_view> keys;  // count
  const int8_t* codes = nullptr;       // count x stride
  const float* scales = nullptr;       // count
  const int32_t* sums = nullptr;       // count
};

// A sealed snapshot's rows, imported straight from its file (importSealed; docs/index-snapshot.md). Chunk i
// is AES-256-GCM ciphertext and its 16-byte tag at [offset, offset + length) of `fd`, opened under `key`
// with its nonce and additional data; its plain bytes are
//   u32 rows | u32 key bytes | rows x f32 scale | rows x i32 code sum | rows x stride codes | keys joined by '\0'
// and the chunks' rows in order are the rows of the snapshot.
struct SealedChunk {
  uint64_t offset = 0;
  uint64_t length = 0;  // ciphertext and tag
  uint32_t rows = 0;
  std::vector<uint8_t> nonce;
  std::vector<uint8_t> aad;
};

struct SealedRows {
  SealedRows() = default;
  SealedRows(const SealedRows&) = delete;
  SealedRows& operator=(const SealedRows&) = delete;
  ~SealedRows();  // wipes the key
  int fd = -1;
  uint8_t key[32] = {};
  size_t stride = 0;
  size_t count = 0;  // rows in all (the header's)
  std::vector<SealedChunk> chunks;
};

// Why an importSealed failed, besides its IndexResult (the caller maps these to its own errors).
enum class SealedFault {
  None,         // not a fault of the file (see the IndexResult: a bad row, a repeated key, memory)
  Unavailable,  // no AES-256-GCM in this process (core/sealed/aes_gcm.h): use another reader
  Read,         // the file could not be read
  Cut,          // the file ends before a chunk does
  Open,         // a chunk's tag does not verify: damaged, moved, or another key
  Format,       // a chunk's rows or sizes differ from what the caller said
};

// Whether importSealed can open snapshots in this process: AES-256-GCM from the process's own OpenSSL
// (Node's), looked up at run time (core/sealed/aes_gcm.h). Otherwise *why says what is missing.
bool sealedImportAvailable(std::string* why);

// Busy time of an importSealed, summed over its threads (seconds).
struct SealedStats {
  size_t rows = 0;
  unsigned threads = 0;
  double readSeconds = 0;  // pread of the chunks
  double openSeconds = 0;  // AES-GCM into the rows, and each row's check
  double keySeconds = 0;   // the key map
};

// Shared/exclusive lock where a waiting writer holds the turnstile, so new readers queue behind it.
class RwGate {
 public:
  void lock_shared() {
    { std::lock_guard<std::mutex> g(turnstile_); }
    rw_.lock_shared();
  }
  void unlock_shared() { rw_.unlock_shared(); }
  void lock() {
    std::lock_guard<std::mutex> g(turnstile_);
    rw_.lock();
  }
  void unlock() { rw_.unlock(); }

 private:
  std::mutex turnstile_;
  std::shared_mutex rw_;
};

struct Chunk;

// How a collection's rows are laid out in its chunks (row_storage.h).
struct RowShape {
  size_t stride = 0;     // bytes of int8 codes per row
  size_t vstride = 0;    // floats per float32 row; 0 without vectors
  size_t chunkRows = 0;  // rows per chunk
};

// Rows of one collection (everything a search reads), swappable as a whole.
struct Storage {
  Storage();
  ~Storage();
  Storage(Storage&&) noexcept;
  Storage& operator=(Storage&&) noexcept;
  std::vector<std::unique_ptr<Chunk>> chunks;
  KeyTable keys;  // slot <-> key
  size_t n = 0;
  float maxScale = 0;  // largest per-row code scale (bounds the int8 error for the floor prefilter)
};

class RowSource;

class Collection {
 public:
  // withVectors = false: no float32 templates are kept (search returns int8 estimates; get, score and
  // exactSearch fail with BadArgument).
  explicit Collection(size_t dim, bool withVectors = true);
  ~Collection();
  Collection(const Collection&) = delete;
  Collection& operator=(const Collection&) = delete;

  size_t dim() const { return dim_; }
  size_t size() const { return size_.load(std::memory_order_acquire); }
  bool hasVectors() const { return shape_.vstride != 0; }
  CollectionStats stats() const;

  // One template (dim floats, normalised here; a zero vector stays zero and scores 0 with everything).
  // Insert fails with KeyExists, Replace with KeyNotFound; *added tells which one Upsert did.
  IndexResult write(std::string_view key, const float* v, WriteMode mode, bool* added = nullptr);
  IndexResult remove(std::string_view key, bool* removed);
  // n templates (n * dim floats, row-major) with their keys, upsert semantics (a key repeated within the
  // batch: the last template wins, at the place of the first). clear = replace the whole content.
  // Multi-threaded normalisation/quantisation when threads != 1 (0 = all cores).
  IndexResult bulkLoad(const float* data, size_t n, const std::vector<std::string>& keys, bool clear,
                       unsigned threads, BulkStats* stats);
  IndexResult clear();

  // Snapshot of the rows without re-quantisation (code_snapshot.cpp). Export copies under the read lock.
  // Import needs a collection without vectors, checks every row (codes in -127..127, zero padding, code
  // sum, finite scale) before anything is visible, and has the semantics of bulkLoad (clear, or upsert).
  IndexResult exportCodes(CodeExport* out) const;
  IndexResult importCodes(const CodeRows& rows, bool clear, unsigned threads, BulkStats* stats);
  // A sealed snapshot straight from its file into new rows on `threads` threads (0 = all cores): every
  // chunk read, opened and its tag verified, every row checked as importCodes does, the keys mapped; only
  // then do the rows replace the collection's content (clear semantics). Any failure changes nothing and
  // says in *fault whether the file was at fault (sealed_import.cpp). Needs a collection without vectors.
  IndexResult importSealed(const SealedRows& rows, unsigned threads, SealedStats* stats, SealedFault* fault);
  // Sealed templates (storage's sealed values, core/sealed/sealed_batch.h; batch.out unused) opened with the
  // 32-byte key straight into the rows, each deciphered into its float32 row (or a scratch row) and encoded
  // there: bulkLoad's upsert semantics without an unsealed copy of the batch. When a row does not open,
  // nothing changes and *opened names the lowest such row as openSealedBatch would (the IndexResult is
  // BadArgument); a row that opens but is no template fails as bulkLoad does, *opened saying none.
  IndexResult loadSealedTemplates(const crypto::SealedBatch& batch, const uint8_t* key,
                                  const std::vector<std::string>& keys, unsigned threads, BulkStats* stats,
                                  crypto::SealedBatchResult* opened);

  // nq queries (nq * dim floats). out->at(j) = hits of query j, best first.
  IndexResult search(const float* queries, size_t nq, const SearchOptions& opts,
                     std::vector<std::vector<Hit>>* out) const;
  // Plain float32 brute force over the stored templates (reference for tests and recall), same tie rule.
  IndexResult exactSearch(const float* queries, size_t nq, const SearchOptions& opts,
                          std::vector<std::vector<Hit>>* out) const;
  // The stored (normalised) template of key.
  IndexResult get(std::string_view key, std::vector<float>* out) const;
  // Float32 cosine between the query and each key's template (NaN for keys not in the collection).
  IndexResult score(const float* query, const std::vector<std::string>& keys, std::vector<float>* out) const;
  // Benchmark reference: reads every row's int8 codes once with `kernel`'s stream loop on `threads`
  // threads; returns seconds and the bytes read.
  IndexResult streamCodes(const Kernel* kernel, unsigned threads, double* seconds, size_t* bytes) const;

 private:
  struct Prepared;
  IndexResult prepareQueries(const float* queries, size_t nq, const Kernel* k, Prepared* p) const;

  // Bulk load steps (bulk_load.cpp), for any source of rows (templates to encode, or int8 rows to copy).
  // A SlotSource is (row slot, index of the row in the source).
  using SlotSource = std::pair<uint32_t, uint32_t>;
  IndexResult loadRows(const RowSource& src, bool clear, unsigned threads, BulkStats* stats);
  IndexResult replaceContent(const RowSource& src, unsigned threads, BulkStats* stats);
  IndexResult upsertInPlace(const RowSource& src, unsigned threads, BulkStats* stats);
  void redoRowsForRepeatedKeys(Storage& st, const RowSource& src, unsigned threads) const;
  bool fillRowsInto(Storage& st, const RowSource& src, const std::vector<SlotSource>& rows, unsigned threads) const;

  const size_t dim_;
  const size_t stride_;
  const RowShape shape_;
  mutable RwGate gate_;
  Storage st_;
  std::atomic<size_t> size_{0};
  std::atomic<size_t> chunkCount_{0};
  std::atomic<size_t> keyBytes_{0};  // st_.keys.bytes(), for stats() without the lock
  void publish();  // refresh the atomics above from st_ (under the exclusive lock)
  // Takes back the keys a failed append added (slots n0..), zeroing their rows if any were written.
  void undoNewKeys(size_t n0, bool zeroRows);
};

// Named collections (one per account).
class Registry {
 public:
  // Creates the collection, or finds it if it exists with the same dim and vectors choice (*created = false).
  IndexResult create(const std::string& name, size_t dim, bool* created, bool withVectors = true);
  std::shared_ptr<Collection> find(const std::string& name) const;
  bool drop(const std::string& name);
  std::vector<std::string> names() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Collection>> map_;
};

// The process-wide registry used by the addon.
Registry& registry();

// Normalises v (dim floats) into out; returns false when v has a NaN or infinity. Zero stays zero.
bool normalise(const float* v, size_t dim, float* out);
// Quantises a normalised vector into `stride` int8 codes (zero padded); returns the scale
// (code * scale ~ value) and the code sum.
float quantise(const float* v, size_t dim, size_t stride, int8_t* codes, int32_t* sum);
// Cosines of a query with m templates (m x dim, row-major), each side normalised as the index does and
// multiplied with the active kernel's float32 dot: exactly what Collection::score returns for stored
// templates. A template with a NaN or an infinity scores NaN; a non-finite query is BadArgument.
IndexResult cosines(const float* query, const float* templates, size_t m, size_t dim, float* out);
// normalise() then quantise() in one call (bit-identical results); false when v is not finite.
bool encode(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes, float* scale, int32_t* sum);

}  // namespace facecheck::index
