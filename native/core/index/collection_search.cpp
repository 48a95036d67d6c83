// Collection searches: the int8 scan with a float32 re-rank of the best candidates (search; without
// vectors the int8 estimates are returned), and the plain float32 brute force used as the reference
// (exactSearch). Both order equal scores by key.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <shared_mutex>

#include "core/index/guarded.h"
#include "core/index/partition.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

namespace {

constexpr size_t kQueryGroup = 64;  // queries scanned together against one block of rows

struct Cand {
  float score;
  uint32_t slot;
  std::string_view key;
};
// Strict total order: higher score first, then the smaller key (byte order of the UTF-8 key).
inline bool better(const Cand& a, const Cand& b) {
  return a.score > b.score || (a.score == b.score && a.key < b.key);
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

}  // namespace

struct Collection::Prepared {
  size_t nq = 0;
  size_t pbytes = 0;
  std::vector<float> norm;       // nq x dim normalised queries
  AlignedArray<uint8_t> kernel;  // nq x pbytes, the kernel's query format
  std::vector<float> qscale;     // nq
  std::vector<float> l1;         // nq, |q|_1 of the normalised query
};

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
  const bool rerank = hasVectors();
  return guarded([&]() -> IndexResult {
    Prepared p;
    r = prepareQueries(queries, nq, K, &p);
    if (!r.ok()) return r;
    out->assign(nq, {});

    std::shared_lock<RwGate> lock(gate_);
    const size_t n = st_.n;
    if (n == 0) return {};
    // Without vectors the int8 estimates are the answer: the best k of them.
    const size_t C = !rerank ? std::min(n, o.k) : std::min(n, std::max(o.k, o.rerank ? o.rerank : std::max<size_t>(64, 4 * o.k)));

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
        const Chunk& ch = *st_.chunks[s / shape_.chunkRows];
        const size_t r0 = s % shape_.chunkRows;
        const size_t nr = std::min({kScanBlock, shape_.chunkRows - r0, hi - s});
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
              offer(h, C, Cand{sc[t], slot, st_.keys.key(slot)});
            }
          }
        }
        s += nr;
      }
    });

    // Merge the partitions, re-score the candidates in float32 (when kept), keep the top k above the floor.
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
        if (!rerank) {
          exact.push_back(c);  // already past the floor's int8 entry threshold
          continue;
        }
        float s = K->dot_f32(q, rowAt(st_, c.slot, shape_).vec, dim_);
        if (s >= o.floor) exact.push_back(Cand{s, c.slot, c.key});
      }
      std::sort(exact.begin(), exact.end(), better);
      if (exact.size() > o.k) exact.resize(o.k);
      auto& hits = (*out)[j];
      hits.reserve(exact.size());
      for (const Cand& c : exact) hits.push_back(Hit{std::string(c.key), c.score});
    }
    return {};
  });
}

IndexResult Collection::exactSearch(const float* queries, size_t nq, const SearchOptions& o,
                                    std::vector<std::vector<Hit>>* out) const {
  IndexResult r = checkSearch(queries, nq, o);
  if (!r.ok()) return r;
  if (!hasVectors())
    return IndexResult::fail(IndexCode::BadArgument, "the collection keeps no float32 templates (made without vectors)");
  const Kernel* K = o.kernel ? o.kernel : activeKernel();
  return guarded([&]() -> IndexResult {
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
            RowView rv = rowAt(st_, s, shape_);
            float sc = K->dot_f32(q, rv.vec, dim_);
            if (sc >= o.floor) offer(h, k, Cand{sc, uint32_t(s), st_.keys.key(uint32_t(s))});
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
      for (const Cand& c : all) (*out)[j].push_back(Hit{std::string(c.key), c.score});
    }
    return {};
  });
}

}  // namespace facecheck::index
