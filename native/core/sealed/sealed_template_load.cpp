// Collection::loadSealedTemplates: a PostgreSQL node's start-up build hands over one account's templates as
// they came from the database, sealed. Each row is deciphered straight into the float32 template the
// collection keeps for it (or a scratch row when it keeps none) and encoded there, so the build never holds
// an unsealed copy of a batch: on a host where fresh memory is dear, those copies were a third of the
// build's page faults. Rows are written as bulkLoad writes them (bulk_load.cpp, upsert), which also means a
// failed load changes nothing. AES-256-GCM is the process's OpenSSL (core/sealed/aes_gcm.h).
#include <string.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/sealed/aes_gcm.h"
#include "core/sealed/sealed_batch.h"
#include "core/index/guarded.h"
#include "core/index/row_source.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

namespace {

using crypto::AesGcmOpener;
using crypto::SealedBatch;
using crypto::SealedBatchResult;
using crypto::SealedRowFailure;
using crypto::SealedRowFault;

constexpr const char* kNoContext = "cannot make an AES-GCM context (out of memory)";

// AES-GCM contexts lent to whichever thread fills a row: the row source is shared by the load's threads and
// is not told which one calls. A context is made once per thread that needs one, and freed (its key schedule
// cleansed by OpenSSL) with the pool.
class OpenerPool {
 public:
  // A context, or nullptr when none can be made.
  std::unique_ptr<AesGcmOpener> take() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<AesGcmOpener> o = std::move(free_.back());
        free_.pop_back();
        return o;
      }
    }
    try {
      auto o = std::make_unique<AesGcmOpener>();
      return o->ok() ? std::move(o) : nullptr;
    } catch (...) {
      return nullptr;
    }
  }

  void give(std::unique_ptr<AesGcmOpener> o) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      free_.push_back(std::move(o));
    } catch (...) {
      // No room to keep it: it is freed here instead.
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<AesGcmOpener>> free_;
};

class SealedTemplateRows final : public RowSource {
 public:
  SealedTemplateRows(const SealedBatch& batch, const uint8_t* key, const std::vector<std::string>& keys, size_t dim,
                     size_t stride)
      : b_(batch), key_(key), keys_(keys), dim_(dim), stride_(stride) {}

  size_t size() const override { return keys_.size(); }
  std::string_view key(size_t i) const override { return keys_[i]; }

  bool valid(size_t i, float* scratch) const override {
    const bool ok = open(i, scratch) && normalise(scratch, dim_, scratch);
    explicit_bzero(scratch, dim_ * sizeof(float));
    return ok;
  }

  bool fill(size_t i, const RowView& rv, float* scratch) const override {
    // The template is deciphered where its normalised form is kept, then encoded in place (encode reads
    // each value before it writes it).
    float* row = rv.vec ? rv.vec : scratch;
    if (!open(i, row)) return false;
    const bool ok = encode(row, dim_, stride_, row, rv.code, &rv.chunk->scale[rv.row], &rv.chunk->sums[rv.row]);
    if (!rv.vec) explicit_bzero(scratch, dim_ * sizeof(float));
    return ok;
  }

  const char* badRowMessage() const override { return "a template has a NaN or an infinity"; }

  // Whether a row could not be judged: no memory for a context or a scratch value. (A row that does not
  // open fails the load as a bad row, which the caller then names.)
  bool outOfMemory() const { return outOfMemory_.load(); }

 private:
  bool open(size_t i, float* out) const {
    std::unique_ptr<AesGcmOpener> opener = pool_.take();
    if (!opener) {
      outOfMemory_ = true;
      return false;
    }
    std::vector<uint8_t> odd;  // only a plain value of another size than a row allocates
    const SealedRowFailure f = crypto::openSealedRow(*opener, key_, b_, i, out, odd);
    pool_.give(std::move(opener));
    if (f.fault == SealedRowFault::Unavailable) outOfMemory_ = true;
    return f.fault == SealedRowFault::None;
  }

  const SealedBatch& b_;
  const uint8_t* key_;
  const std::vector<std::string>& keys_;
  const size_t dim_, stride_;
  mutable OpenerPool pool_;
  mutable std::atomic<bool> outOfMemory_{false};
};

// The lowest row that does not open, found one row after another: the load's threads stop at the first
// failure any of them meets, not necessarily the lowest, and a row whose key repeats later in the batch is
// not opened at all. Runs only after a load failed.
SealedBatchResult firstUnopened(const SealedBatch& b, const uint8_t* key) {
  SealedBatchResult r;
  AesGcmOpener opener;
  if (!opener.ok()) {
    r.fault = SealedRowFault::Unavailable;
    r.detail = kNoContext;
    return r;
  }
  std::vector<float> row(b.dimension);
  std::vector<uint8_t> odd;
  for (size_t i = 0; i < b.rows; ++i) {
    const SealedRowFailure f = crypto::openSealedRow(opener, key, b, i, row.data(), odd);
    if (f.fault == SealedRowFault::None) continue;
    if (f.fault == SealedRowFault::Unavailable) {
      r.fault = f.fault;
      r.detail = "sealed batch: out of memory";
    } else {
      r.failedRow = int64_t(i);
      r.fault = f.fault;
      r.bytes = f.bytes;
      r.version = f.version;
    }
    break;
  }
  explicit_bzero(row.data(), row.size() * sizeof(float));
  return r;
}

// A key given twice: the load writes only its last row (bulkLoad's rule), so the earlier ones would go unopened.
bool hasRepeatedKeys(const std::vector<std::string>& keys) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(keys.size());
  for (const auto& k : keys)
    if (!seen.insert(k).second) return true;
  return false;
}

IndexResult checkSealedLoad(const SealedBatch& b, const uint8_t* key, const std::vector<std::string>& keys,
                            size_t dim) {
  if (!key) return IndexResult::fail(IndexCode::BadArgument, "missing key");
  if (keys.size() != b.rows) return IndexResult::fail(IndexCode::BadArgument, "keys and sealed templates differ in count");
  if (b.dimension != dim) return IndexResult::fail(IndexCode::DimMismatch, "template dimension differs from the collection's");
  if (b.rows > 0 && (!b.sealed || !b.aad)) return IndexResult::fail(IndexCode::BadArgument, "missing sealed templates");
  if (!crypto::sealedBatchOffsetsValid(b)) return IndexResult::fail(IndexCode::BadArgument, "sealed batch: offsets out of bounds");
  for (const auto& k : keys) {
    if (k.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
    if (k.size() > KeyTable::kMaxKeyBytes) return IndexResult::fail(IndexCode::BadArgument, "key longer than 65535 bytes");
  }
  return {};
}

}  // namespace

IndexResult Collection::loadSealedTemplates(const SealedBatch& batch, const uint8_t* key,
                                            const std::vector<std::string>& keys, unsigned threads, BulkStats* stats,
                                            SealedBatchResult* opened) {
  *stats = BulkStats{};
  *opened = SealedBatchResult{};
  return guarded([&]() -> IndexResult {
    std::string why;
    if (!crypto::sealedBatchAvailable(&why)) {
      opened->fault = SealedRowFault::Unavailable;
      opened->detail = why;
      return IndexResult::fail(IndexCode::BadArgument, "sealed templates cannot be opened here: " + why);
    }
    IndexResult r = checkSealedLoad(batch, key, keys, dim_);
    if (!r.ok()) return r;
    // What openSealedBatch would say of the batch: the lowest row that does not open, if any.
    auto judgeEveryRow = [&]() -> IndexResult {
      *opened = firstUnopened(batch, key);
      if (opened->fault == SealedRowFault::Unavailable) return IndexResult::fail(IndexCode::OutOfMemory, opened->detail);
      if (opened->failedRow >= 0) return IndexResult::fail(IndexCode::BadArgument, "a sealed template does not open");
      return {};
    };
    // Every row must open, including those a repeated key supersedes (the load writes only the last).
    if (hasRepeatedKeys(keys)) {
      r = judgeEveryRow();
      if (!r.ok()) return r;
    }
    SealedTemplateRows src(batch, key, keys, dim_, stride_);
    r = loadRows(src, false, threads, stats);
    if (r.ok()) return r;
    if (src.outOfMemory()) return IndexResult::fail(IndexCode::OutOfMemory, kNoContext);
    // A bad row: one that does not open is named first, as openSealedBatch would have failed before any load.
    if (r.code == IndexCode::BadArgument) {
      IndexResult sealed = judgeEveryRow();
      if (!sealed.ok()) return sealed;
    }
    return r;
  });
}

}  // namespace facecheck::index
