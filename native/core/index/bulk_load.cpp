// Collection::bulkLoad: many rows at once, either replacing the whole content (built outside the lock, then
// swapped in) or upserting in place under the lock. Both paths fill rows on several threads; the rows come
// from a RowSource (templates to encode here, int8 rows of a snapshot in code_snapshot.cpp).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/index/guarded.h"
#include "core/index/partition.h"
#include "core/index/row_source.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

namespace {

constexpr size_t kRowsPerBulkThread = 4096;  // fewer rows than this per thread is not worth a thread

IndexResult checkBatch(const float* data, size_t n, const std::vector<std::string>& keys) {
  if (keys.size() != n) return IndexResult::fail(IndexCode::BadArgument, "keys and templates differ in count");
  if (n > 0 && !data) return IndexResult::fail(IndexCode::BadArgument, "missing templates");
  for (const auto& k : keys) {
    if (k.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
    if (k.size() > KeyTable::kMaxKeyBytes) return IndexResult::fail(IndexCode::BadArgument, "key longer than 65535 bytes");
  }
  return {};
}

unsigned bulkThreads(unsigned requested, size_t n) {
  return unsigned(std::min<size_t>(requested ? requested : hardwareThreads(), std::max<size_t>(1, n / kRowsPerBulkThread)));
}

IndexResult badRow(const RowSource& src) { return IndexResult::fail(IndexCode::BadArgument, src.badRowMessage()); }

// Float templates (n x dim, row-major) with their keys: normalised and quantised into the rows.
class TemplateRows final : public RowSource {
 public:
  TemplateRows(const float* data, const std::vector<std::string>& keys, size_t dim, size_t stride)
      : data_(data), keys_(keys), dim_(dim), stride_(stride) {}
  size_t size() const override { return keys_.size(); }
  std::string_view key(size_t i) const override { return keys_[i]; }
  bool valid(size_t i, float* scratch) const override { return normalise(data_ + i * dim_, dim_, scratch); }
  bool fill(size_t i, const RowView& rv, float* scratch) const override {
    return encode(data_ + i * dim_, dim_, stride_, rv.vec ? rv.vec : scratch, rv.code, &rv.chunk->scale[rv.row],
                  &rv.chunk->sums[rv.row]);
  }
  const char* badRowMessage() const override { return "a template has a NaN or an infinity"; }

 private:
  const float* data_;
  const std::vector<std::string>& keys_;
  const size_t dim_, stride_;
};

// One scratch row of dim floats per thread, allocated before the threads start (a std::thread must not throw).
std::vector<std::vector<float>> scratchRows(unsigned parts, size_t dim) {
  return std::vector<std::vector<float>>(parts, std::vector<float>(dim));
}

// Fills row i of `st` from source row i for every i < n, handed out in grains to the threads that call
// run(part); a bad row stops everyone.
class InOrderFiller {
 public:
  InOrderFiller(Storage& st, const RowSource& src, size_t dim, const RowShape& shape, unsigned parts)
      : st_(st), src_(src), n_(src.size()), shape_(shape), maxScale_(parts, 0.0f),
        scratch_(scratchRows(parts, dim)) {}

  void run(unsigned part) {
    constexpr size_t kGrain = 512;
    float ms = 0;
    float* scratch = scratch_[part].data();
    for (;;) {
      const size_t lo = next_.fetch_add(kGrain);
      if (lo >= n_ || bad_.load(std::memory_order_relaxed)) break;
      const size_t hi = std::min(n_, lo + kGrain);
      for (size_t i = lo; i < hi; ++i) {
        RowView rv = rowAt(st_, i, shape_);
        if (!src_.fill(i, rv, scratch)) {
          bad_ = true;
          break;
        }
        ms = std::max(ms, rv.chunk->scale[rv.row]);
      }
    }
    maxScale_[part] = ms;
  }
  void stop() { bad_ = true; }
  bool failed() const { return bad_; }
  float maxScale() const { return *std::max_element(maxScale_.begin(), maxScale_.end()); }

 private:
  Storage& st_;
  const RowSource& src_;
  const size_t n_;
  const RowShape shape_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> bad_{false};
  std::vector<float> maxScale_;
  std::vector<std::vector<float>> scratch_;
};

// Starts filler.run(1..parts-1) on threads of their own; fewer when a thread cannot be started (the
// work is shared through the filler, so it still all gets done).
std::vector<std::thread> startFillers(InOrderFiller& filler, unsigned parts) {
  std::vector<std::thread> workers;
  for (unsigned p = 1; p < parts; ++p) {
    try {
      workers.emplace_back([&filler, p] { filler.run(p); });
    } catch (...) {
      break;
    }
  }
  return workers;
}

void joinAll(std::vector<std::thread>& workers) {
  for (auto& w : workers) w.join();
}

// Room for the keys of all source rows on top of what `keys` holds.
void reserveKeys(KeyTable& keys, const RowSource& src) {
  size_t bytes = 0;
  for (size_t i = 0; i < src.size(); ++i) bytes += src.key(i).size();
  keys.reserveMore(src.size(), bytes);
}

// Key i -> slot i; false (and the map left partial) at the first repeated key.
bool mapKeysInOrder(Storage& st, const RowSource& src) {
  const size_t n = src.size();
  reserveKeys(st.keys, src);
  uint32_t slot;
  for (size_t i = 0; i < n; ++i)
    if (!st.keys.add(src.key(i), &slot)) return false;
  return true;
}

}  // namespace

IndexResult Collection::bulkLoad(const float* data, size_t n, const std::vector<std::string>& keys, bool clear,
                                 unsigned threads, BulkStats* stats) {
  *stats = BulkStats{};
  IndexResult r = checkBatch(data, n, keys);
  if (!r.ok()) return r;
  TemplateRows src(data, keys, dim_, stride_);
  return loadRows(src, clear, threads, stats);
}

IndexResult Collection::loadRows(const RowSource& src, bool clear, unsigned threads, BulkStats* stats) {
  *stats = BulkStats{};
  const unsigned T = bulkThreads(threads, src.size());
  IndexResult r = guarded([&] { return clear ? replaceContent(src, T, stats) : upsertInPlace(src, T, stats); });
  if (!r.ok()) *stats = BulkStats{};
  return r;
}

// Builds the new content outside the lock, then swaps it in, so searches go on meanwhile. Keys are
// normally unique, so row i takes source row i: the other threads fill rows while this one builds the key
// map, then joins them. If a key repeats, the rows are redone with the general mapping (last row wins).
IndexResult Collection::replaceContent(const RowSource& src, unsigned threads, BulkStats* stats) {
  const size_t n = src.size();
  Storage ns;
  if (!reserveRows(ns, n, shape_)) return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate index rows");
  InOrderFiller filler(ns, src, dim_, shape_, threads);
  std::vector<std::thread> workers = startFillers(filler, threads);
  bool unique;
  try {
    unique = mapKeysInOrder(ns, src);
  } catch (...) {
    filler.stop();  // stop the fillers before reporting
    joinAll(workers);
    throw;
  }
  filler.run(0);
  joinAll(workers);
  if (filler.failed()) return badRow(src);
  if (unique) {
    ns.n = n;
    ns.maxScale = std::max(ns.maxScale, filler.maxScale());
  } else {
    redoRowsForRepeatedKeys(ns, src, threads);
  }
  stats->added = ns.n;
  {
    std::lock_guard<RwGate> lock(gate_);
    std::swap(ns, st_);
    publish();
  }
  return {};  // the old content (now in ns) is freed outside the lock
}

// After mapKeysInOrder met a repeated key: one slot per distinct key in order of first appearance, each
// holding the last row given for it. Rows were all checked by the first pass.
void Collection::redoRowsForRepeatedKeys(Storage& st, const RowSource& src, unsigned threads) const {
  const size_t n = src.size();
  st.keys.truncate(0);
  std::vector<SlotSource> rows;
  rows.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t slot;
    if (st.keys.add(src.key(i), &slot)) {
      rows.emplace_back(slot, uint32_t(i));
      st.n++;
    } else {
      rows[slot].second = uint32_t(i);  // repeated key: last row wins
    }
  }
  // Rows past st.n hold rows of repeated keys: zero them (no trace), then redo.
  for (size_t slot = st.n; slot < n; ++slot) wipeRow(rowAt(st, slot, shape_), shape_);
  trimChunks(st, shape_);
  fillRowsInto(st, src, rows, threads);
}

// Appends new keys and replaces existing ones under the lock. A bad row must change nothing: replaced rows
// are checked before any row is written; new rows are checked while they are filled and, if one is bad,
// the new keys are taken back (one pass over the data instead of two: this is the start-up rebuild's path).
IndexResult Collection::upsertInPlace(const RowSource& src, unsigned threads, BulkStats* stats) {
  const size_t n = src.size();
  std::lock_guard<RwGate> lock(gate_);
  const size_t n0 = st_.n;
  // New keys get slots n0.. in order of first appearance (index in `added` = slot - n0); replaced keys are
  // listed in `replaced` (one entry per slot, the last row wins).
  std::vector<SlotSource> added, replaced;
  std::unordered_map<uint32_t, uint32_t> replacedIndex;  // slot -> index in `replaced`
  try {
    added.reserve(n);
    reserveKeys(st_.keys, src);
    for (size_t i = 0; i < n; ++i) {
      uint32_t slot;
      if (st_.keys.add(src.key(i), &slot)) {
        st_.n++;
        added.emplace_back(slot, uint32_t(i));
      } else if (slot >= n0) {
        added[slot - n0].second = uint32_t(i);
      } else {
        auto t = replacedIndex.emplace(slot, uint32_t(replaced.size()));
        if (t.second)
          replaced.emplace_back(slot, uint32_t(i));
        else
          replaced[t.first->second].second = uint32_t(i);
      }
    }
    if (!reserveRows(st_, st_.n, shape_)) throw std::bad_alloc();
  } catch (...) {
    undoNewKeys(n0, false);
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  }
  std::vector<float> scratch(dim_);
  for (const SlotSource& r : replaced) {
    if (!src.valid(r.second, scratch.data())) {
      undoNewKeys(n0, false);
      return badRow(src);
    }
  }
  if (!fillRowsInto(st_, src, added, threads)) {
    undoNewKeys(n0, true);
    return badRow(src);
  }
  fillRowsInto(st_, src, replaced, threads);  // checked above: cannot fail
  stats->added = st_.n - n0;
  stats->replaced = replaced.size();
  publish();
  return {};
}

// Fills rows[i] = (slot, source row) in parallel; false if a source row is bad.
bool Collection::fillRowsInto(Storage& st, const RowSource& src, const std::vector<SlotSource>& rows,
                              unsigned threads) const {
  std::vector<float> maxScale(threads, 0.0f);
  std::vector<char> bad(threads, 0);
  std::vector<std::vector<float>> scratch = scratchRows(threads, dim_);
  runPartitioned(threads, rows.size(), [&](unsigned p, size_t lo, size_t hi) {
    float ms = 0;
    for (size_t i = lo; i < hi; ++i) {
      RowView rv = rowAt(st, rows[i].first, shape_);
      if (!src.fill(rows[i].second, rv, scratch[p].data())) {
        bad[p] = 1;
        return;
      }
      ms = std::max(ms, rv.chunk->scale[rv.row]);
    }
    maxScale[p] = ms;
  });
  for (unsigned p = 0; p < threads; ++p)
    if (bad[p]) return false;
  for (float s : maxScale) st.maxScale = std::max(st.maxScale, s);
  return true;
}

}  // namespace facecheck::index
