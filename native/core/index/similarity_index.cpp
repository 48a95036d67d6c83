// Similarity index: storage, writes, the int8 scan + float32 re-rank search, the float32 reference search.
// See similarity_index.h for the design.
#include "core/index/similarity_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <atomic>
#include <thread>

namespace facecheck::index {

// ---------------------------------------------------------------------------------------------------------
// Status names

const char* indexCodeName(IndexCode code) {
  switch (code) {
    case IndexCode::Ok: return "OK";
    case IndexCode::BadArgument: return "ERR_INDEX_BAD_ARGUMENT";
    case IndexCode::NoCollection: return "ERR_INDEX_NO_COLLECTION";
    case IndexCode::DimMismatch: return "ERR_INDEX_DIM_MISMATCH";
    case IndexCode::KeyExists: return "ERR_INDEX_KEY_EXISTS";
    case IndexCode::KeyNotFound: return "ERR_INDEX_KEY_NOT_FOUND";
    case IndexCode::OutOfMemory: return "ERR_INDEX_OUT_OF_MEMORY";
    case IndexCode::Internal: return "ERR_INDEX_INTERNAL";
  }
  return "ERR_INDEX_INTERNAL";
}

Status toStatus(IndexCode code) {
  switch (code) {
    case IndexCode::Ok: return Status::Ok;
    case IndexCode::BadArgument:
    case IndexCode::DimMismatch: return Status::FieldsValidation;
    case IndexCode::NoCollection:
    case IndexCode::KeyNotFound: return Status::FaceNotInCollection;
    case IndexCode::KeyExists: return Status::FaceExists;
    case IndexCode::OutOfMemory:
    case IndexCode::Internal: return Status::Internal;
  }
  return Status::Internal;
}

// ---------------------------------------------------------------------------------------------------------
// Memory

namespace {

constexpr size_t kChunkRows = 4096;         // rows per chunk (2 MiB of codes at 512-d)
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kQueryGroup = 64;          // queries scanned together against one block of rows
constexpr size_t kAutoWorkPerThread = 32768;  // rows x queries that justify one more scan thread
constexpr size_t kMinRowsPerThread = 1024;

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Anonymous mapping, zero filled, returned to the OS on destruction. With `huge`, 2 MiB aligned and
// advised for transparent huge pages: the int8 codes, which are streamed by every search (huge pages
// measured ~1.8x faster for the scan than 4 KiB pages). The float32 templates are read for a few
// candidates per query only and stay on normal pages (no huge-page compaction for 80% of the memory).
constexpr int kMadvPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14); older headers lack the name

class MappedBuffer {
 public:
  MappedBuffer() = default;
  MappedBuffer(size_t bytes, bool hugeAdvice) {
    if (bytes == 0) return;
    const bool huge = hugeAdvice && bytes >= kHugePage;
    const size_t size = huge ? roundUp(bytes, kHugePage) : roundUp(bytes, 4096);
    const size_t span = huge ? size + kHugePage : size;
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    uint8_t* base = static_cast<uint8_t*>(p);
    if (huge) {
      uint8_t* aligned = reinterpret_cast<uint8_t*>(roundUp(reinterpret_cast<uintptr_t>(base), kHugePage));
      if (aligned > base) munmap(base, size_t(aligned - base));
      uint8_t* end = aligned + size;
      if (base + span > end) munmap(end, size_t(base + span - end));
      base = aligned;
#ifdef MADV_HUGEPAGE
      madvise(base, size, MADV_HUGEPAGE);
#endif
    }
    // Fault every page in now, in one call: chunks are filled right after they are made, and a bulk load
    // of 1M templates otherwise took ~600k separate page faults (measured: sys time 2.2-5.4 s -> 1.6-1.8 s).
    // Ignored by kernels before 5.14.
    madvise(base, size, kMadvPopulateWrite);
    ptr_ = base;
    size_ = size;
  }
  ~MappedBuffer() {
    if (ptr_) munmap(ptr_, size_);
  }
  MappedBuffer(MappedBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) { o.ptr_ = nullptr, o.size_ = 0; }
  MappedBuffer& operator=(MappedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  uint8_t* data() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  uint8_t* ptr_ = nullptr;
  size_t size_ = 0;
};

// 64-byte aligned scratch array (heap; freed with the object).
template <typename T>
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(size_t n) { resize(n); }
  void resize(size_t n) {
    raw_.assign(n * sizeof(T) + 64, 0);
    ptr_ = reinterpret_cast<T*>(roundUp(reinterpret_cast<uintptr_t>(raw_.data()), 64));
  }
  T* data() const { return ptr_; }
  T& operator[](size_t i) const { return ptr_[i]; }

 private:
  std::vector<uint8_t> raw_;
  T* ptr_ = nullptr;
};

}  // namespace

struct Chunk {
  MappedBuffer codes;  // kChunkRows x stride int8
  MappedBuffer vecs;   // kChunkRows x vstride float
  MappedBuffer meta;   // scale (float) and code sum (int32) per row
  float* scale = nullptr;
  int32_t* sums = nullptr;

  static std::unique_ptr<Chunk> make(size_t stride, size_t vstride) {
    std::unique_ptr<Chunk> c(new (std::nothrow) Chunk());
    if (!c) return nullptr;
    c->codes = MappedBuffer(kChunkRows * stride, true);
    // Not huge: the float32 rows are only read for re-ranking a few candidates, and asking for huge pages
    // here made start-up bulk loads slower and erratic (direct compaction: 3.2-7.0 s vs 2.8-3.0 s for 1M).
    c->vecs = MappedBuffer(kChunkRows * vstride * sizeof(float), false);
    c->meta = MappedBuffer(kChunkRows * (sizeof(float) + sizeof(int32_t)), false);
    if (!c->codes.data() || !c->vecs.data() || !c->meta.data()) return nullptr;
    c->scale = reinterpret_cast<float*>(c->meta.data());
    c->sums = reinterpret_cast<int32_t*>(c->meta.data() + kChunkRows * sizeof(float));
    return c;
  }
  size_t bytes() const { return codes.size() + vecs.size() + meta.size(); }
};

Storage::Storage() = default;
Storage::~Storage() = default;
Storage::Storage(Storage&&) noexcept = default;
Storage& Storage::operator=(Storage&&) noexcept = default;

// ---------------------------------------------------------------------------------------------------------
// Vectors

// These run for every template and query, in the baseline instruction set: loops are written with eight
// explicit lanes so that the compiler vectorises them without reassociating anything (the results do not
// depend on the compiler's choices, nor on the SIMD kernel in use).

namespace {
// max |v_i| over eight lanes, and whether some v_i is a NaN or an infinity.
__attribute__((always_inline)) inline float maxAbs(const float* v, size_t dim, bool* nonFinite) {
  float m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t bad[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (size_t l = 0; l < 8; ++l) {
      uint32_t b;
      std::memcpy(&b, v + i + l, 4);
      bad[l] |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
      const float a = std::fabs(v[i + l]);
      m[l] = a > m[l] ? a : m[l];
    }
  for (; i < dim; ++i) {
    uint32_t b;
    std::memcpy(&b, v + i, 4);
    bad[0] |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
    const float a = std::fabs(v[i]);
    m[0] = a > m[0] ? a : m[0];
  }
  float r = 0;
  uint32_t any = 0;
  for (size_t l = 0; l < 8; ++l) {
    r = m[l] > r ? m[l] : r;
    any |= bad[l];
  }
  if (nonFinite) *nonFinite = any != 0;
  return r;
}

// 1 / |v|, computed on v / maxabs (maxabs > 0) so that the squares stay in range for any finite input.
__attribute__((always_inline)) inline float inverseNorm(const float* v, size_t dim, float maxabs) {
  const float pre = 1.0f / maxabs;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (size_t l = 0; l < 8; ++l) {
      const float x = v[i + l] * pre;
      acc[l] += x * x;
    }
  float ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < dim; ++i) {
    const float x = v[i] * pre;
    ss += x * x;
  }
  return pre / std::sqrt(ss);
}

// codes_j = round(v_j * q) clamped to [-127, 127] (half away from zero: vectorisable, unlike nearbyint);
// returns the sum of the codes.
__attribute__((always_inline)) inline int32_t quantiseRow(const float* v, size_t dim, float q, int8_t* codes) {
  int32_t s = 0;
  for (size_t j = 0; j < dim; ++j) {
    float x = v[j] * q;
    x = x + (x >= 0.0f ? 0.5f : -0.5f);
    x = x > 127.0f ? 127.0f : (x < -127.0f ? -127.0f : x);
    const int32_t c = int32_t(x);
    codes[j] = int8_t(c);
    s += c;
  }
  return s;
}
}  // namespace

// The bulk-load and write path: normalise + quantise in one go (4 passes over the row instead of 5). On
// x86-64 it is also compiled for AVX2 and picked once at run time; both builds run the same IEEE
// operations lane by lane (no FMA), so the results are bit-identical to normalise() then quantise().
// (A plain function pointer rather than an ifunc: ifunc resolvers run before the sanitizer runtimes start.)
namespace {
__attribute__((always_inline)) inline bool encodeImpl(const float* v, size_t dim, size_t stride, float* vec,
                                                      int8_t* codes, float* scale, int32_t* sum) {
  bool bad = false;
  const float maxabs = maxAbs(v, dim, &bad);
  if (bad) return false;
  std::memset(codes + dim, 0, stride - dim);
  if (maxabs == 0) {
    std::memset(vec, 0, dim * sizeof(float));
    std::memset(codes, 0, dim);
    *scale = 0;
    *sum = 0;
    return true;
  }
  const float inv = inverseNorm(v, dim, maxabs);
  for (size_t j = 0; j < dim; ++j) vec[j] = v[j] * inv;
  // max |vec_j| without another pass: rounding is monotonic and symmetric, so it is maxabs * inv exactly.
  const float m = maxabs * inv;
  const int32_t s = quantiseRow(vec, dim, 127.0f / m, codes);
  *scale = m / 127.0f;
  *sum = s;
  return true;
}

bool encodeBaseline(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes, float* scale, int32_t* sum) {
  return encodeImpl(v, dim, stride, vec, codes, scale, sum);
}

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
__attribute__((target("avx2"))) bool encodeAvx2(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes,
                                                float* scale, int32_t* sum) {
  return encodeImpl(v, dim, stride, vec, codes, scale, sum);
}
#endif

using EncodeFn = bool (*)(const float*, size_t, size_t, float*, int8_t*, float*, int32_t*);

EncodeFn pickEncode() {
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return encodeAvx2;
#endif
  return encodeBaseline;
}
}  // namespace

bool encode(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes, float* scale, int32_t* sum) {
  static const EncodeFn fn = pickEncode();
  return fn(v, dim, stride, vec, codes, scale, sum);
}

bool normalise(const float* v, size_t dim, float* out) {
  bool bad = false;
  const float maxabs = maxAbs(v, dim, &bad);
  if (bad) return false;
  if (maxabs == 0) {
    std::memset(out, 0, dim * sizeof(float));
    return true;
  }
  const float inv = inverseNorm(v, dim, maxabs);
  for (size_t j = 0; j < dim; ++j) out[j] = v[j] * inv;
  return true;
}

float quantise(const float* v, size_t dim, size_t stride, int8_t* codes, int32_t* sum) {
  const float maxabs = maxAbs(v, dim, nullptr);
  std::memset(codes + dim, 0, stride - dim);
  if (maxabs == 0) {
    std::memset(codes, 0, dim);
    *sum = 0;
    return 0.0f;
  }
  *sum = quantiseRow(v, dim, 127.0f / maxabs, codes);
  return maxabs / 127.0f;
}

// ---------------------------------------------------------------------------------------------------------
// Collection

namespace {

struct Cand {
  float score;
  uint32_t slot;
  const std::string* key;
};
// Strict total order: higher score first, then the smaller key (byte order of the UTF-8 key).
inline bool better(const Cand& a, const Cand& b) {
  return a.score > b.score || (a.score == b.score && *a.key < *b.key);
}

// Pushes c into a heap (worst on top) holding at most cap entries.
inline void offer(std::vector<Cand>& h, size_t cap, const Cand& c) {
  if (h.size() < cap) {
    h.push_back(c);
    std::push_heap(h.begin(), h.end(), better);
  } else if (better(c, h.front())) {
    std::pop_heap(h.begin(), h.end(), better);
    h.back() = c;
    std::push_heap(h.begin(), h.end(), better);
  }
}

unsigned hardwareThreads() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

unsigned resolveThreads(unsigned requested, size_t rows, size_t work) {
  unsigned t = requested == 0 ? unsigned(std::min<size_t>(hardwareThreads(), std::max<size_t>(1, work / kAutoWorkPerThread)))
                              : std::min(requested, 64u);
  t = unsigned(std::min<size_t>(t, std::max<size_t>(1, rows / kMinRowsPerThread)));
  return t ? t : 1;
}

// Runs fn(part, lo, hi) over `parts` contiguous ranges of [0, n) (range bounds multiples of kScanBlock),
// part 0 on the calling thread. Falls back to running a part inline when a thread cannot be started.
template <typename Fn>
void runPartitioned(unsigned parts, size_t n, Fn&& fn) {
  std::vector<size_t> bounds(parts + 1, n);
  bounds[0] = 0;
  for (unsigned p = 1; p < parts; ++p) bounds[p] = std::min(n, roundUp(n * p / parts, kScanBlock));
  std::vector<std::thread> workers;
  std::vector<unsigned> inline_parts;
  for (unsigned p = 1; p < parts; ++p) {
    try {
      workers.emplace_back([&fn, &bounds, p] { fn(p, bounds[p], bounds[p + 1]); });
    } catch (...) {
      inline_parts.push_back(p);
    }
  }
  fn(0u, bounds[0], bounds[1]);
  for (unsigned p : inline_parts) fn(p, bounds[p], bounds[p + 1]);
  for (auto& w : workers) w.join();
}

}  // namespace

struct Collection::Prepared {
  size_t nq = 0;
  size_t pbytes = 0;
  std::vector<float> norm;       // nq x dim normalised queries
  AlignedArray<uint8_t> kernel;  // nq x pbytes, the kernel's query format
  std::vector<float> qscale;     // nq
  std::vector<float> l1;         // nq, |q|_1 of the normalised query
};

Collection::Collection(size_t dim) : dim_(dim), stride_(roundUp(dim ? dim : 1, kCodeAlign)) {}
Collection::~Collection() = default;

void Collection::publish() {
  size_.store(st_.n, std::memory_order_release);
  chunkCount_.store(st_.chunks.size(), std::memory_order_release);
  keyBytes_.store(st_.keyBytes, std::memory_order_release);
}

CollectionStats Collection::stats() const {
  CollectionStats s;
  s.size = size();
  s.dim = dim_;
  s.codeStride = stride_;
  const size_t vstride = roundUp(dim_, 16);
  const size_t chunkBytes = roundUp(kChunkRows * stride_, kChunkRows * stride_ >= kHugePage ? kHugePage : 4096) +
                            roundUp(kChunkRows * vstride * 4, 4096) + roundUp(kChunkRows * 8, 4096);
  s.bytesAllocated = chunkCount_.load(std::memory_order_acquire) * chunkBytes;
  // Map node (key string + slot + hash + next pointer + allocator overhead), bucket, slot -> entry pointer.
  s.bytesKeys = s.size * (sizeof(std::string) + 8 + 8 + 8 + 16 + 8 + 8) + keyBytes_.load(std::memory_order_acquire);
  return s;
}

namespace {

size_t keyHeapBytes(const std::string& k) { return k.size() > 15 ? k.size() + 1 : 0; }

struct RowView {
  int8_t* code;
  float* vec;
  Chunk* chunk;
  size_t row;
};

inline RowView rowAt(const Storage& st, size_t slot, size_t stride, size_t vstride) {
  Chunk* c = st.chunks[slot / kChunkRows].get();
  size_t r = slot % kChunkRows;
  return RowView{reinterpret_cast<int8_t*>(c->codes.data()) + r * stride,
                 reinterpret_cast<float*>(c->vecs.data()) + r * vstride, c, r};
}

// Makes room for `rows` rows; false when memory runs out (the chunks added so far stay, empty).
bool reserveRows(Storage& st, size_t rows, size_t stride, size_t vstride) {
  while (st.chunks.size() * kChunkRows < rows) {
    auto c = Chunk::make(stride, vstride);
    if (!c) return false;
    st.chunks.push_back(std::move(c));
  }
  return true;
}

// Frees chunks beyond the one spare after the last used row.
void trimChunks(Storage& st) {
  size_t need = (st.n + kChunkRows - 1) / kChunkRows;
  while (st.chunks.size() > need + 1) st.chunks.pop_back();
}

}  // namespace

IndexResult Collection::write(std::string_view key, const float* v, WriteMode mode, bool* added) {
  if (added) *added = false;
  if (key.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
  if (!v) return IndexResult::fail(IndexCode::BadArgument, "missing template");
  const size_t vstride = roundUp(dim_, 16);
  try {
    std::vector<float> norm(dim_);
    AlignedArray<int8_t> codes(stride_);
    int32_t sum = 0;
    float scale = 0;
    if (!encode(v, dim_, stride_, norm.data(), codes.data(), &scale, &sum))
      return IndexResult::fail(IndexCode::BadArgument, "template has a NaN or an infinity");
    std::string k(key);

    std::lock_guard<RwGate> lock(gate_);
    auto it = st_.slots.find(k);
    size_t slot;
    if (it != st_.slots.end()) {
      if (mode == WriteMode::Insert) return IndexResult::fail(IndexCode::KeyExists, "key already in the collection");
      slot = it->second;  // replace in place, keeping the enrolment order
    } else {
      if (mode == WriteMode::Replace) return IndexResult::fail(IndexCode::KeyNotFound, "key not in the collection");
      if (!reserveRows(st_, st_.n + 1, stride_, vstride)) {
        chunkCount_.store(st_.chunks.size());
        return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate index rows");
      }
      if (st_.keys.size() == st_.keys.capacity()) st_.keys.reserve(std::max<size_t>(64, 2 * st_.keys.capacity()));
      slot = st_.n;
      auto ins = st_.slots.emplace(std::move(k), uint32_t(slot));
      st_.keys.push_back(&*ins.first);  // capacity reserved: cannot throw
      st_.keyBytes += keyHeapBytes(ins.first->first);
      st_.n++;
      if (added) *added = true;
    }
    RowView rv = rowAt(st_, slot, stride_, vstride);
    std::memcpy(rv.code, codes.data(), stride_);
    std::memcpy(rv.vec, norm.data(), dim_ * sizeof(float));
    rv.chunk->scale[rv.row] = scale;
    rv.chunk->sums[rv.row] = sum;
    st_.maxScale = std::max(st_.maxScale, scale);
    publish();
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

IndexResult Collection::remove(std::string_view key, bool* removed) {
  *removed = false;
  const size_t vstride = roundUp(dim_, 16);
  try {
    std::string k(key);
    std::lock_guard<RwGate> lock(gate_);
    auto it = st_.slots.find(k);
    if (it == st_.slots.end()) return {};
    const size_t slot = it->second, last = st_.n - 1;
    st_.keyBytes -= keyHeapBytes(it->first);
    st_.slots.erase(it);
    RowView dst = rowAt(st_, slot, stride_, vstride);
    RowView src = rowAt(st_, last, stride_, vstride);
    if (slot != last) {
      std::memcpy(dst.code, src.code, stride_);
      std::memcpy(dst.vec, src.vec, dim_ * sizeof(float));
      dst.chunk->scale[dst.row] = src.chunk->scale[src.row];
      dst.chunk->sums[dst.row] = src.chunk->sums[src.row];
      st_.keys[slot] = st_.keys[last];
      st_.keys[slot]->second = uint32_t(slot);
    }
    // Leave no trace of the removed template: the vacated last row is zeroed.
    std::memset(src.code, 0, stride_);
    std::memset(src.vec, 0, vstride * sizeof(float));
    src.chunk->scale[src.row] = 0;
    src.chunk->sums[src.row] = 0;
    st_.keys.pop_back();
    st_.n--;
    if (st_.n == 0) st_.maxScale = 0;
    trimChunks(st_);
    publish();
    *removed = true;
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

IndexResult Collection::clear() {
  Storage old;
  {
    std::lock_guard<RwGate> lock(gate_);
    std::swap(old, st_);
    publish();
  }
  return {};  // `old` is freed here, outside the lock
}

void Collection::undoNewKeys(size_t n0, bool zeroRows) {
  const size_t vstride = roundUp(dim_, 16);
  for (size_t s = n0; s < st_.keys.size(); ++s) {
    if (zeroRows && s / kChunkRows < st_.chunks.size()) {
      RowView rv = rowAt(st_, s, stride_, vstride);
      std::memset(rv.code, 0, stride_);
      std::memset(rv.vec, 0, vstride * sizeof(float));
      rv.chunk->scale[rv.row] = 0;
      rv.chunk->sums[rv.row] = 0;
    }
    st_.keyBytes -= keyHeapBytes(st_.keys[s]->first);
    st_.slots.erase(st_.slots.find(st_.keys[s]->first));
  }
  st_.keys.resize(n0);
  st_.n = n0;
  trimChunks(st_);
  publish();
}

IndexResult Collection::bulkLoad(const float* data, size_t n, const std::vector<std::string>& keys, bool clear,
                                 unsigned threads, BulkStats* stats) {
  *stats = BulkStats{};
  if (keys.size() != n) return IndexResult::fail(IndexCode::BadArgument, "keys and templates differ in count");
  if (n > 0 && !data) return IndexResult::fail(IndexCode::BadArgument, "missing templates");
  for (const auto& k : keys)
    if (k.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
  const size_t vstride = roundUp(dim_, 16);
  const unsigned T = unsigned(std::min<size_t>(threads ? threads : hardwareThreads(), std::max<size_t>(1, n / 4096)));

  // Writes rows todo[i] = (slot, source) in parallel; false if a template is not finite.
  auto fill = [&](Storage& st, const std::vector<std::pair<uint32_t, uint32_t>>& todo) {
    std::vector<float> maxScale(T, 0.0f);
    std::vector<char> bad(T, 0);
    runPartitioned(T, todo.size(), [&](unsigned p, size_t lo, size_t hi) {
      float ms = 0;
      for (size_t i = lo; i < hi; ++i) {
        RowView rv = rowAt(st, todo[i].first, stride_, vstride);
        if (!encode(data + size_t(todo[i].second) * dim_, dim_, stride_, rv.vec, rv.code, &rv.chunk->scale[rv.row],
                    &rv.chunk->sums[rv.row])) {
          bad[p] = 1;
          return;
        }
        ms = std::max(ms, rv.chunk->scale[rv.row]);
      }
      maxScale[p] = ms;
    });
    for (unsigned p = 0; p < T; ++p)
      if (bad[p]) return false;
    for (float s : maxScale) st.maxScale = std::max(st.maxScale, s);
    return true;
  };

  try {
    if (clear) {
      // Build the new content outside the lock, then swap it in. Keys are normally unique, so row i
      // takes template i: the other threads encode rows while this one builds the key map, then joins
      // them. If a key repeats, the rows are redone with the general mapping (last template wins).
      Storage ns;
      if (!reserveRows(ns, n, stride_, vstride)) return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate index rows");
      std::atomic<size_t> next{0};
      std::atomic<bool> bad{false};
      std::vector<float> maxScale(T, 0.0f);
      auto encodeRows = [&](unsigned p) {
        constexpr size_t kGrain = 512;
        float ms = 0;
        for (;;) {
          const size_t lo = next.fetch_add(kGrain);
          if (lo >= n || bad.load(std::memory_order_relaxed)) break;
          const size_t hi = std::min(n, lo + kGrain);
          for (size_t i = lo; i < hi; ++i) {
            RowView rv = rowAt(ns, i, stride_, vstride);
            if (!encode(data + i * dim_, dim_, stride_, rv.vec, rv.code, &rv.chunk->scale[rv.row], &rv.chunk->sums[rv.row])) {
              bad = true;
              break;
            }
            ms = std::max(ms, rv.chunk->scale[rv.row]);
          }
        }
        maxScale[p] = ms;
      };
      std::vector<std::thread> workers;
      for (unsigned p = 1; p < T; ++p) {
        try {
          workers.emplace_back(encodeRows, p);
        } catch (...) {
          break;  // fewer threads: the work is shared through `next`
        }
      }
      bool repeated = false;
      try {
        ns.slots.reserve(n);
        ns.keys.reserve(n);
        for (size_t i = 0; i < n && !repeated; ++i) {
          auto ins = ns.slots.emplace(keys[i], uint32_t(i));
          if (!ins.second) {
            repeated = true;
            break;
          }
          ns.keys.push_back(&*ins.first);
          ns.keyBytes += keyHeapBytes(ins.first->first);
        }
      } catch (...) {
        bad = true;  // stop the encoders, then report
        for (auto& w : workers) w.join();
        throw;
      }
      encodeRows(0);
      for (auto& w : workers) w.join();
      if (bad) return IndexResult::fail(IndexCode::BadArgument, "a template has a NaN or an infinity");
      if (!repeated) {
        ns.n = n;
        for (float m : maxScale) ns.maxScale = std::max(ns.maxScale, m);
      } else {
        ns.slots.clear();
        ns.keys.clear();
        ns.keyBytes = 0;
        std::vector<std::pair<uint32_t, uint32_t>> todo;
        todo.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          auto ins = ns.slots.emplace(keys[i], uint32_t(ns.n));
          if (ins.second) {
            ns.keys.push_back(&*ins.first);
            ns.keyBytes += keyHeapBytes(ins.first->first);
            todo.emplace_back(uint32_t(ns.n), uint32_t(i));
            ns.n++;
          } else {
            todo[ins.first->second].second = uint32_t(i);  // repeated key: last template wins
          }
        }
        // Rows past ns.n hold encoded templates of repeated keys: zero them (no trace), then redo.
        for (size_t sl = ns.n; sl < n; ++sl) {
          RowView rv = rowAt(ns, sl, stride_, vstride);
          std::memset(rv.code, 0, stride_);
          std::memset(rv.vec, 0, vstride * sizeof(float));
          rv.chunk->scale[rv.row] = 0;
          rv.chunk->sums[rv.row] = 0;
        }
        trimChunks(ns);
        fill(ns, todo);  // templates checked above
      }
      stats->added = ns.n;
      {
        std::lock_guard<RwGate> lock(gate_);
        std::swap(ns, st_);
        publish();
      }
      return {};  // the old content (now in ns) is freed outside the lock
    }

    // Append/replace in place. A bad template must change nothing: replaced rows are checked before any
    // row is written; new rows are checked while they are encoded and, if one is bad, the new keys are
    // taken back (one pass over the data instead of two: this is the start-up rebuild's path).
    std::lock_guard<RwGate> lock(gate_);
    const size_t n0 = st_.n;
    // New keys get slots n0.. in order of first appearance (todo index = slot - n0); replaced keys are
    // listed in `repl` (one entry per slot, the last template wins).
    std::vector<std::pair<uint32_t, uint32_t>> todo, repl;
    std::unordered_map<uint32_t, uint32_t> replOfSlot;  // slot -> index in repl
    try {
      todo.reserve(n);
      st_.keys.reserve(n0 + n);
      for (size_t i = 0; i < n; ++i) {
        auto ins = st_.slots.emplace(keys[i], uint32_t(st_.n));
        const uint32_t slot = ins.first->second;
        if (ins.second) {
          st_.keys.push_back(&*ins.first);
          st_.keyBytes += keyHeapBytes(ins.first->first);
          st_.n++;
          todo.emplace_back(slot, uint32_t(i));
        } else if (slot >= n0) {
          todo[slot - n0].second = uint32_t(i);
        } else {
          auto t = replOfSlot.emplace(slot, uint32_t(repl.size()));
          if (t.second)
            repl.emplace_back(slot, uint32_t(i));
          else
            repl[t.first->second].second = uint32_t(i);
        }
      }
      if (!reserveRows(st_, st_.n, stride_, vstride)) throw std::bad_alloc();
    } catch (...) {
      undoNewKeys(n0, false);
      *stats = BulkStats{};
      return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
    }
    {
      std::vector<float> tmp(dim_);
      for (const auto& r : repl) {
        if (!normalise(data + size_t(r.second) * dim_, dim_, tmp.data())) {
          undoNewKeys(n0, false);
          return IndexResult::fail(IndexCode::BadArgument, "a template has a NaN or an infinity");
        }
      }
    }
    if (!fill(st_, todo)) {
      undoNewKeys(n0, true);
      return IndexResult::fail(IndexCode::BadArgument, "a template has a NaN or an infinity");
    }
    fill(st_, repl);  // checked above: cannot fail
    stats->added = st_.n - n0;
    stats->replaced = repl.size();
    publish();
    return {};
  } catch (const std::bad_alloc&) {
    *stats = BulkStats{};
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    *stats = BulkStats{};
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

IndexResult Collection::prepareQueries(const float* queries, size_t nq, const Kernel* k, Prepared* p) const {
  p->nq = nq;
  p->pbytes = roundUp(k->prepared_bytes(stride_), 64);
  p->norm.resize(nq * dim_);
  p->kernel.resize(nq * p->pbytes);
  p->qscale.resize(nq);
  p->l1.resize(nq);
  AlignedArray<int8_t> codes(stride_);
  for (size_t j = 0; j < nq; ++j) {
    float* q = p->norm.data() + j * dim_;
    if (!normalise(queries + j * dim_, dim_, q))
      return IndexResult::fail(IndexCode::BadArgument, "query has a NaN or an infinity");
    int32_t sum = 0;
    p->qscale[j] = quantise(q, dim_, stride_, codes.data(), &sum);
    k->prepare(codes.data(), stride_, p->kernel.data() + j * p->pbytes);
    float l1 = 0;
    for (size_t i = 0; i < dim_; ++i) l1 += std::fabs(q[i]);
    p->l1[j] = l1;
  }
  return {};
}

static IndexResult checkSearch(const float* queries, size_t nq, const SearchOptions& o) {
  if (!queries || nq == 0) return IndexResult::fail(IndexCode::BadArgument, "no query");
  if (o.k < 1) return IndexResult::fail(IndexCode::BadArgument, "k must be at least 1");
  if (std::isnan(o.floor)) return IndexResult::fail(IndexCode::BadArgument, "floor is NaN");
  return {};
}

IndexResult Collection::search(const float* queries, size_t nq, const SearchOptions& o,
                               std::vector<std::vector<Hit>>* out) const {
  IndexResult r = checkSearch(queries, nq, o);
  if (!r.ok()) return r;
  const Kernel* K = o.kernel ? o.kernel : activeKernel();
  const size_t vstride = roundUp(dim_, 16);
  try {
    Prepared p;
    r = prepareQueries(queries, nq, K, &p);
    if (!r.ok()) return r;
    out->assign(nq, {});

    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    if (n == 0) return {};
    const size_t C = std::min(n, std::max(o.k, o.rerank ? o.rerank : std::max<size_t>(64, 4 * o.k)));

    // Entry threshold per query: floor minus a bound of the int8 error, so that no template scoring at
    // least the floor in float32 is dropped by the prefilter:
    // |q.x - q'.x'| <= |q|_1 * s_x / 2 + |x'|_1 * s_q / 2, |x'|_1 <= sqrt(d) * (1 + sqrt(d) * s_x / 2).
    std::vector<float> entry(nq, -std::numeric_limits<float>::infinity());
    if (std::isfinite(o.floor)) {
      const float sd = std::sqrt(float(dim_)), sx = st_.maxScale;
      for (size_t j = 0; j < nq; ++j) {
        float m = p.l1[j] * sx * 0.5f + p.qscale[j] * 0.5f * sd * (1.0f + sd * sx * 0.5f);
        entry[j] = o.floor - (m * 1.001f + 1e-4f);
      }
    }

    const unsigned T = resolveThreads(o.threads, n, n * nq);
    // heaps[part][query]
    std::vector<std::vector<std::vector<Cand>>> heaps(T, std::vector<std::vector<Cand>>(nq));
    for (auto& hs : heaps)
      for (auto& h : hs) h.reserve(C + 1);
    const size_t G = std::min(kQueryGroup, nq);
    std::vector<AlignedArray<int32_t>> raws;
    for (unsigned t = 0; t < T; ++t) raws.emplace_back(G * kScanBlock);

    runPartitioned(T, n, [&](unsigned part, size_t lo, size_t hi) {
      auto& hs = heaps[part];
      int32_t* raw = raws[part].data();
      uint32_t idx[kScanBlock];
      float sc[kScanBlock];
      for (size_t s = lo; s < hi;) {
        const Chunk& ch = *st_.chunks[s / kChunkRows];
        const size_t r0 = s % kChunkRows;
        const size_t nr = std::min({kScanBlock, kChunkRows - r0, hi - s});
        const int8_t* rows = reinterpret_cast<const int8_t*>(ch.codes.data()) + r0 * stride_;
        for (size_t g = 0; g < nq; g += G) {
          const size_t gq = std::min(G, nq - g);
          K->scan(p.kernel.data() + g * p.pbytes, gq, rows, nr, stride_, ch.sums + r0, raw, kScanBlock);
          for (size_t j = 0; j < gq; ++j) {
            auto& h = hs[g + j];
            float thr = entry[g + j];
            if (h.size() >= C) thr = std::max(thr, h.front().score);
            size_t m = K->select(raw + j * kScanBlock, ch.scale + r0, nr, p.qscale[g + j], thr, idx, sc);
            for (size_t t = 0; t < m; ++t) {
              const uint32_t slot = uint32_t(s + idx[t]);
              offer(h, C, Cand{sc[t], slot, &st_.keys[slot]->first});
            }
          }
        }
        s += nr;
      }
    });

    // Merge the partitions, re-score the candidates in float32, keep the top k above the floor.
    std::vector<Cand> all, exact;
    for (size_t j = 0; j < nq; ++j) {
      all.clear();
      for (unsigned t = 0; t < T; ++t) all.insert(all.end(), heaps[t][j].begin(), heaps[t][j].end());
      if (all.size() > C) {
        std::nth_element(all.begin(), all.begin() + C, all.end(), better);
        all.resize(C);
      }
      exact.clear();
      const float* q = p.norm.data() + j * dim_;
      for (const Cand& c : all) {
        float s = K->dot_f32(q, rowAt(st_, c.slot, stride_, vstride).vec, dim_);
        if (s >= o.floor) exact.push_back(Cand{s, c.slot, c.key});
      }
      std::sort(exact.begin(), exact.end(), better);
      if (exact.size() > o.k) exact.resize(o.k);
      auto& hits = (*out)[j];
      hits.reserve(exact.size());
      for (const Cand& c : exact) hits.push_back(Hit{st_.keys[c.slot]->first, c.score});
    }
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

IndexResult Collection::exactSearch(const float* queries, size_t nq, const SearchOptions& o,
                                    std::vector<std::vector<Hit>>* out) const {
  IndexResult r = checkSearch(queries, nq, o);
  if (!r.ok()) return r;
  const Kernel* K = o.kernel ? o.kernel : activeKernel();
  const size_t vstride = roundUp(dim_, 16);
  try {
    std::vector<float> norm(nq * dim_);
    for (size_t j = 0; j < nq; ++j)
      if (!normalise(queries + j * dim_, dim_, norm.data() + j * dim_))
        return IndexResult::fail(IndexCode::BadArgument, "query has a NaN or an infinity");
    out->assign(nq, {});
    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    if (n == 0) return {};
    const size_t k = std::min(n, o.k);
    const unsigned T = resolveThreads(o.threads, n, n * nq);
    std::vector<std::vector<std::vector<Cand>>> heaps(T, std::vector<std::vector<Cand>>(nq));
    for (auto& hs : heaps)
      for (auto& h : hs) h.reserve(k + 1);
    runPartitioned(T, n, [&](unsigned part, size_t lo, size_t hi) {
      auto& hs = heaps[part];
      constexpr size_t kRowsBlock = 32;  // rows kept in cache while every query passes over them
      for (size_t s0 = lo; s0 < hi; s0 += kRowsBlock) {
        const size_t s1 = std::min(hi, s0 + kRowsBlock);
        for (size_t j = 0; j < nq; ++j) {
          const float* q = norm.data() + j * dim_;
          auto& h = hs[j];
          for (size_t s = s0; s < s1; ++s) {
            RowView rv = rowAt(st_, s, stride_, vstride);
            float sc = K->dot_f32(q, rv.vec, dim_);
            if (sc >= o.floor) offer(h, k, Cand{sc, uint32_t(s), &st_.keys[s]->first});
          }
        }
      }
    });
    std::vector<Cand> all;
    for (size_t j = 0; j < nq; ++j) {
      all.clear();
      for (unsigned t = 0; t < T; ++t) all.insert(all.end(), heaps[t][j].begin(), heaps[t][j].end());
      std::sort(all.begin(), all.end(), better);
      if (all.size() > k) all.resize(k);
      for (const Cand& c : all) (*out)[j].push_back(Hit{st_.keys[c.slot]->first, c.score});
    }
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

IndexResult Collection::get(std::string_view key, std::vector<float>* out) const {
  try {
    std::string k(key);
    std::shared_lock<RwGate> lock(gate_);
    auto it = st_.slots.find(k);
    if (it == st_.slots.end()) return IndexResult::fail(IndexCode::KeyNotFound, "key not in the collection");
    const float* v = rowAt(st_, it->second, stride_, roundUp(dim_, 16)).vec;
    out->assign(v, v + dim_);
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  }
}

IndexResult Collection::score(const float* query, const std::vector<std::string>& keys, std::vector<float>* out) const {
  if (!query) return IndexResult::fail(IndexCode::BadArgument, "no query");
  try {
    std::vector<float> q(dim_);
    if (!normalise(query, dim_, q.data()))
      return IndexResult::fail(IndexCode::BadArgument, "query has a NaN or an infinity");
    const Kernel* K = activeKernel();
    out->assign(keys.size(), std::numeric_limits<float>::quiet_NaN());
    std::shared_lock<RwGate> lock(gate_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = st_.slots.find(keys[i]);
      if (it != st_.slots.end())
        (*out)[i] = K->dot_f32(q.data(), rowAt(st_, it->second, stride_, roundUp(dim_, 16)).vec, dim_);
    }
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  }
}

IndexResult Collection::streamCodes(const Kernel* kernel, unsigned threads, double* seconds, size_t* bytes) const {
  const Kernel* K = kernel ? kernel : activeKernel();
  try {
    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    const unsigned T = std::max(1u, std::min(threads ? threads : hardwareThreads(), 64u));
    std::vector<uint64_t> sink(T, 0);
    auto t0 = std::chrono::steady_clock::now();
    runPartitioned(T, n, [&](unsigned part, size_t lo, size_t hi) {
      uint64_t x = 0;
      for (size_t s = lo; s < hi;) {
        const Chunk& ch = *st_.chunks[s / kChunkRows];
        const size_t r0 = s % kChunkRows;
        const size_t nr = std::min(kChunkRows - r0, hi - s);
        x ^= K->stream(ch.codes.data() + r0 * stride_, nr * stride_);
        s += nr;
      }
      sink[part] = x;
    });
    auto t1 = std::chrono::steady_clock::now();
    volatile uint64_t keep = 0;
    for (uint64_t x : sink) keep = keep ^ x;
    (void)keep;
    *seconds = std::chrono::duration<double>(t1 - t0).count();
    *bytes = n * stride_;
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  }
}

// ---------------------------------------------------------------------------------------------------------
// Registry

IndexResult Registry::create(const std::string& name, size_t dim, bool* created) {
  *created = false;
  if (name.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty collection name");
  if (dim == 0 || dim > 65536) return IndexResult::fail(IndexCode::BadArgument, "dim must be in 1..65536");
  try {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(name);
    if (it != map_.end()) {
      if (it->second->dim() != dim)
        return IndexResult::fail(IndexCode::DimMismatch, "collection exists with another dimension");
      return {};
    }
    map_.emplace(name, std::make_shared<Collection>(dim));
    *created = true;
    return {};
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  }
}

std::shared_ptr<Collection> Registry::find(const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : it->second;
}

bool Registry::drop(const std::string& name) {
  std::shared_ptr<Collection> victim;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(name);
    if (it == map_.end()) return false;
    victim = std::move(it->second);
    map_.erase(it);
  }
  // Unmapping gigabytes takes a while: let a background thread do it rather than the caller (the
  // event loop). Searches in flight hold their own reference and finish first.
  if (victim.use_count() == 1 && victim->size() >= 65536) {
    try {
      std::thread([v = std::move(victim)]() mutable { v.reset(); }).detach();
    } catch (...) {
      // no thread: freed here
    }
  }
  return true;
}

std::vector<std::string> Registry::names() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string> out;
  out.reserve(map_.size());
  for (const auto& kv : map_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace facecheck::index
