#include "core/sealed/sealed_batch.h"

#include <string.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/sealed/aes_gcm.h"

namespace facecheck::crypto {

namespace {


static_assert(kSealOverheadBytes == 1 + kSealNonceBytes + kAesGcmTagBytes, "the sealed format's tag is GCM's");

// Rows a thread takes at a time: small enough that both cores finish a 4,096-row batch together, large
// enough that the shared counter is not contended (a row is only a short AES-GCM call).
constexpr size_t kRunRows = 64;
// More threads than this only queue on the same cores; the calls are short.
constexpr unsigned kMaxThreads = 16;

constexpr int64_t kNoFailure = INT64_MAX;

// Threads that are joined however the scope ends (a std::thread destroyed joinable ends the process).
class JoiningThreads {
 public:
  explicit JoiningThreads(size_t capacity) { threads_.reserve(capacity); }
  ~JoiningThreads() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  JoiningThreads(const JoiningThreads&) = delete;
  JoiningThreads& operator=(const JoiningThreads&) = delete;

  // False when no thread could be started (the caller's thread does the work alone then).
  template <typename F>
  bool start(F&& work) noexcept {
    try {
      threads_.emplace_back(std::forward<F>(work));
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  std::vector<std::thread> threads_;
};

// The offsets describe rows + 1 boundaries, not decreasing, inside their buffers.
bool offsetsValid(const uint32_t* offsets, size_t rows, size_t bufferBytes) {
  if (!offsets) return rows == 0;
  for (size_t i = 0; i < rows; ++i)
    if (offsets[i + 1] < offsets[i]) return false;
  return offsets[rows] <= bufferBytes;
}

class BatchOpener {
 public:
  BatchOpener(const uint8_t* key, const SealedBatch& b) : key_(key), b_(b) {}

  // One thread's share: runs of rows in order until none is left or every run left begins after a failure.
  void run() noexcept {
    try {
      AesGcmOpener opener;
      if (!opener.ok()) {
        unavailable_.store(true);
        return;
      }
      std::vector<uint8_t> scratch;
      for (;;) {
        const size_t first = next_.fetch_add(kRunRows);
        if (first >= b_.rows || int64_t(first) > failed_.load()) return;
        const size_t end = std::min(b_.rows, first + kRunRows);
        for (size_t i = first; i < end; ++i) {
          // A failure found meanwhile at a lower row makes the rest of this run irrelevant.
          if (int64_t(i) > failed_.load()) return;
          SealedRowFailure f = openRow(i, opener, scratch);
          if (f.fault == SealedRowFault::Unavailable) {
            unavailable_.store(true);  // no memory for the scratch: the batch is not judged
            return;
          }
          if (f.fault != SealedRowFault::None) {
            record(i, f);
            return;
          }
        }
      }
    } catch (...) {
      unavailable_.store(true);  // no memory for the scratch or the context: the batch is not judged
    }
  }

  SealedBatchResult result() const {
    SealedBatchResult r;
    if (unavailable_.load()) {
      r.fault = SealedRowFault::Unavailable;
      r.detail = "cannot make an AES-GCM context (out of memory)";
      return r;
    }
    const int64_t row = failed_.load();
    if (row == kNoFailure) return r;
    r.failedRow = row;
    r.fault = failure_.fault;
    r.bytes = failure_.bytes;
    r.version = failure_.version;
    return r;
  }

 private:
  SealedRowFailure openRow(size_t i, AesGcmOpener& opener, std::vector<uint8_t>& scratch) {
    return openSealedRow(opener, key_, b_, i, b_.out + i * b_.dimension, scratch);
  }

  void record(size_t row, const SealedRowFailure& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int64_t(row) < failed_.load()) {
      failure_ = f;
      failed_.store(int64_t(row));
    }
  }

  const uint8_t* key_;
  const SealedBatch& b_;
  std::atomic<size_t> next_{0};
  std::atomic<int64_t> failed_{kNoFailure};
  std::atomic<bool> unavailable_{false};
  std::mutex mu_;
  SealedRowFailure failure_;
};

}  // namespace

bool sealedBatchAvailable(std::string* why) { return aesGcmAvailable(why); }

bool sealedBatchOffsetsValid(const SealedBatch& batch) {
  return offsetsValid(batch.sealedOffsets, batch.rows, batch.sealedBytes) &&
         offsetsValid(batch.aadOffsets, batch.rows, batch.aadBytes);
}

SealedRowFailure openSealedRow(AesGcmOpener& opener, const uint8_t* key, const SealedBatch& b, size_t i, float* out,
                               std::vector<uint8_t>& scratch) noexcept {
  const uint8_t* sealed = b.sealed + b.sealedOffsets[i];
  const size_t length = b.sealedOffsets[i + 1] - b.sealedOffsets[i];
  if (length < kSealOverheadBytes) return {SealedRowFault::TooShort, length, 0};
  if (sealed[0] != kSealVersion) return {SealedRowFault::Version, 0, sealed[0]};
  const size_t plainBytes = length - kSealOverheadBytes;
  const size_t rowBytes = b.dimension * sizeof(float);
  // A plain size other than the row's is still opened first: a value that does not open says so first.
  uint8_t* plain = reinterpret_cast<uint8_t*>(out);
  if (plainBytes != rowBytes) {
    try {
      scratch.resize(plainBytes);
    } catch (...) {
      return {SealedRowFault::Unavailable, 0, 0};
    }
    plain = scratch.data();
  }
  const uint8_t* nonce = sealed + 1;
  const uint8_t* cipher = nonce + kSealNonceBytes;
  const uint8_t* tag = cipher + plainBytes;
  const uint8_t* aad = b.aad + b.aadOffsets[i];
  const size_t aadBytes = b.aadOffsets[i + 1] - b.aadOffsets[i];
  const bool opened = opener.begin(key, nonce, kSealNonceBytes, aad, aadBytes) &&
                      (plainBytes == 0 || opener.update(cipher, plainBytes, plain)) && opener.finish(tag);
  if (!opened) {
    // Bytes of a value that did not verify are not left where they could be mistaken for a template.
    if (plainBytes) explicit_bzero(plain, plainBytes);
    return {SealedRowFault::Tag, 0, 0};
  }
  if (plainBytes % sizeof(float) != 0 || plainBytes != rowBytes) {
    explicit_bzero(plain, plainBytes);
    return {SealedRowFault::Size, plainBytes, 0};
  }
  return {};
}

SealedBatchResult openSealedBatch(const uint8_t* key, const SealedBatch& batch, unsigned threads) noexcept {
  SealedBatchResult r;
  try {
    std::string why;
    if (!aesGcmAvailable(&why)) {
      r.fault = SealedRowFault::Unavailable;
      r.detail = why;
      return r;
    }
    if (!key || (batch.rows > 0 && (!batch.sealed || !batch.aad || !batch.out)) ||
        !sealedBatchOffsetsValid(batch) ||
        (batch.dimension != 0 && batch.rows > batch.outValues / batch.dimension)) {
      r.detail = "sealed batch: offsets or output out of bounds";
      return r;
    }
    if (batch.rows == 0) return r;
    // The caller holds the key for the call (the addon's worker keeps its own copy and wipes it).
    BatchOpener opener(key, batch);
    unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    n = unsigned(std::min<size_t>({n, kMaxThreads, (batch.rows + kRunRows - 1) / kRunRows}));
    {
      JoiningThreads helpers(n - 1);
      for (unsigned t = 1; t < n; ++t)
        if (!helpers.start([&opener] { opener.run(); })) break;  // the threads started share the rows
      opener.run();
    }
    return opener.result();
  } catch (...) {
    r = SealedBatchResult{};
    r.fault = SealedRowFault::Unavailable;
    r.detail = "sealed batch: out of memory";
    return r;
  }
}

}  // namespace facecheck::crypto
