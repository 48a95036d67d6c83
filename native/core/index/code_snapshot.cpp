// Collection::exportCodes / importCodes: the int8 rows of a collection (codes, scales, code sums, keys) out
// and back in without re-quantisation, so a start-up can load a snapshot instead of encoding every
// template again. Import copies the rows through the bulk-load paths (bulk_load.cpp) and checks each one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "core/index/guarded.h"
#include "core/index/partition.h"
#include "core/index/row_source.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

bool validCodeRow(const int8_t* codes, size_t dim, size_t stride, float scale, int32_t sum) {
  if (!(scale >= 0.0f && scale <= 1.0f)) return false;
  // 32 lanes of int16 sums and byte flags, which the compiler turns into a few vector instructions per 16
  // bytes (faster than one int32 sum; an import checks every code it reads). A lane adds at most 256 codes
  // (256 x 127 < 32768) before it is added to the total.
  constexpr size_t kLanes = 32;
  int32_t s = 0;
  uint8_t bad = 0;
  size_t d = 0;
  while (d + kLanes <= dim) {
    int16_t acc[kLanes] = {};
    uint8_t flag[kLanes] = {};
    const size_t end = std::min(dim - (dim - d) % kLanes, d + kLanes * 256);
    for (; d < end; d += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) {
        acc[j] = int16_t(acc[j] + codes[d + j]);
        flag[j] |= uint8_t(codes[d + j] == -128);
      }
    }
    for (size_t j = 0; j < kLanes; ++j) {
      s += acc[j];
      bad |= flag[j];
    }
  }
  for (; d < dim; ++d) {
    s += codes[d];
    bad |= uint8_t(codes[d] == -128);
  }
  for (d = dim; d < stride; ++d) bad |= uint8_t(codes[d] != 0);
  return bad == 0 && s == sum;
}

namespace {

constexpr auto validRow = validCodeRow;

// The rows of a dump, copied as they are; each is checked (after the copy, while it is in cache).
class CodeRowsSource final : public RowSource {
 public:
  CodeRowsSource(const CodeRows& rows, size_t dim) : r_(rows), dim_(dim) {}
  size_t size() const override { return r_.count; }
  std::string_view key(size_t i) const override { return r_.keys[i]; }
  bool valid(size_t i, float*) const override {
    return validRow(r_.codes + i * r_.stride, dim_, r_.stride, r_.scales[i], r_.sums[i]);
  }
  bool fill(size_t i, const RowView& rv, float*) const override {
    std::memcpy(rv.code, r_.codes + i * r_.stride, r_.stride);
    rv.chunk->scale[rv.row] = r_.scales[i];
    rv.chunk->sums[rv.row] = r_.sums[i];
    return validRow(rv.code, dim_, r_.stride, r_.scales[i], r_.sums[i]);
  }
  const char* badRowMessage() const override {
    return "a row of the dump is not a valid code row (code out of range, padding, code sum or scale)";
  }

 private:
  const CodeRows& r_;
  const size_t dim_;
};

}  // namespace

IndexResult Collection::exportCodes(CodeExport* out) const {
  return guarded([&]() -> IndexResult {
    CodeExport e;
    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    e.count = n;
    size_t keyChars = 0;
    for (size_t s = 0; s < n; ++s) keyChars += st_.keys.key(uint32_t(s)).size() + 1;
    e.keys.reserve(keyChars);
    for (size_t s = 0; s < n; ++s) {
      if (s) e.keys.push_back('\0');
      e.keys.append(st_.keys.key(uint32_t(s)));
    }
    if (n > 0) {
      // One mapping for the three arrays.
      const size_t codeBytes = roundUp(n * stride_, 64), scaleBytes = roundUp(n * sizeof(float), 64);
      auto memory = std::make_shared<MappedBuffer>(codeBytes + scaleBytes + n * sizeof(int32_t), true);
      if (!memory->data()) return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate the exported rows");
      e.codes = reinterpret_cast<int8_t*>(memory->data());
      e.scales = reinterpret_cast<float*>(memory->data() + codeBytes);
      e.sums = reinterpret_cast<int32_t*>(memory->data() + codeBytes + scaleBytes);
      e.memory = std::move(memory);
      // Copied on all cores: the fresh pages of the copy are faulted in (zeroed) by the threads that write
      // them, and writers wait for this read lock.
      const unsigned T = resolveThreads(0, n, n);
      runPartitioned(T, n, [&](unsigned, size_t lo, size_t hi) {
        for (size_t s = lo; s < hi;) {
          const Chunk& ch = *st_.chunks[s / shape_.chunkRows];
          const size_t r0 = s % shape_.chunkRows, nr = std::min(shape_.chunkRows - r0, hi - s);
          std::memcpy(e.codes + s * stride_, ch.codes.data() + r0 * stride_, nr * stride_);
          std::memcpy(e.scales + s, ch.scale + r0, nr * sizeof(float));
          std::memcpy(e.sums + s, ch.sums + r0, nr * sizeof(int32_t));
          s += nr;
        }
      });
    }
    *out = std::move(e);
    return {};
  });
}

IndexResult Collection::importCodes(const CodeRows& rows, bool clear, unsigned threads, BulkStats* stats) {
  *stats = BulkStats{};
  if (hasVectors())
    return IndexResult::fail(IndexCode::BadArgument,
                             "codes alone cannot fill a collection that keeps float32 templates (make it without vectors)");
  if (rows.stride != stride_) return IndexResult::fail(IndexCode::BadArgument, "the dump's stride differs from the collection's");
  if (rows.keys.size() != rows.count) return IndexResult::fail(IndexCode::BadArgument, "keys and rows differ in count");
  if (rows.count > 0 && (!rows.codes || !rows.scales || !rows.sums))
    return IndexResult::fail(IndexCode::BadArgument, "missing rows");
  if (rows.count > UINT32_MAX) return IndexResult::fail(IndexCode::BadArgument, "too many rows");
  for (const auto& k : rows.keys) {
    if (k.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
    if (k.size() > KeyTable::kMaxKeyBytes) return IndexResult::fail(IndexCode::BadArgument, "key longer than 65535 bytes");
  }
  CodeRowsSource src(rows, dim_);
  return loadRows(src, clear, threads, stats);
}

}  // namespace facecheck::index
