// Collection reads by key (a stored template, scores against given keys), the same cosines for templates
// the caller holds, and the memory-read benchmark.
#include <chrono>
#include <limits>
#include <mutex>
#include <shared_mutex>

#include "core/index/guarded.h"
#include "core/index/partition.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

namespace {
IndexResult noVectors() {
  return IndexResult::fail(IndexCode::BadArgument, "the collection keeps no float32 templates (made without vectors)");
}
}  // namespace

IndexResult Collection::get(std::string_view key, std::vector<float>* out) const {
  if (!hasVectors()) return noVectors();
  return guarded([&]() -> IndexResult {
    std::shared_lock<RwGate> lock(gate_);
    const uint32_t slot = st_.keys.find(key);
    if (slot == KeyTable::kNone) return IndexResult::fail(IndexCode::KeyNotFound, "key not in the collection");
    const float* v = rowAt(st_, slot, shape_).vec;
    out->assign(v, v + dim_);
    return {};
  });
}

IndexResult Collection::score(const float* query, const std::vector<std::string>& keys, std::vector<float>* out) const {
  if (!query) return IndexResult::fail(IndexCode::BadArgument, "no query");
  if (!hasVectors()) return noVectors();
  return guarded([&]() -> IndexResult {
    std::vector<float> q(dim_);
    if (!normalise(query, dim_, q.data()))
      return IndexResult::fail(IndexCode::BadArgument, "query has a NaN or an infinity");
    const Kernel* K = activeKernel();
    out->assign(keys.size(), std::numeric_limits<float>::quiet_NaN());
    std::shared_lock<RwGate> lock(gate_);
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t slot = st_.keys.find(keys[i]);
      if (slot != KeyTable::kNone) (*out)[i] = K->dot_f32(q.data(), rowAt(st_, slot, shape_).vec, dim_);
    }
    return {};
  });
}

IndexResult cosines(const float* query, const float* templates, size_t m, size_t dim, float* out) {
  if (!query || (m > 0 && !templates)) return IndexResult::fail(IndexCode::BadArgument, "no query or templates");
  return guarded([&]() -> IndexResult {
    std::vector<float> q(dim), t(dim);
    if (!normalise(query, dim, q.data()))
      return IndexResult::fail(IndexCode::BadArgument, "query has a NaN or an infinity");
    const Kernel* K = activeKernel();
    for (size_t i = 0; i < m; ++i)
      out[i] = normalise(templates + i * dim, dim, t.data()) ? K->dot_f32(q.data(), t.data(), dim)
                                                             : std::numeric_limits<float>::quiet_NaN();
    return {};
  });
}

IndexResult Collection::streamCodes(const Kernel* kernel, unsigned threads, double* seconds, size_t* bytes) const {
  const Kernel* K = kernel ? kernel : activeKernel();
  return guarded([&]() -> IndexResult {
    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    const unsigned T = std::max(1u, std::min(threads ? threads : hardwareThreads(), 64u));
    std::vector<uint64_t> sink(T, 0);
    auto t0 = std::chrono::steady_clock::now();
    runPartitioned(T, n, [&](unsigned part, size_t lo, size_t hi) {
      uint64_t x = 0;
      for (size_t s = lo; s < hi;) {
        const Chunk& ch = *st_.chunks[s / shape_.chunkRows];
        const size_t r0 = s % shape_.chunkRows;
        const size_t nr = std::min(shape_.chunkRows - r0, hi - s);
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
  });
}

}  // namespace facecheck::index
