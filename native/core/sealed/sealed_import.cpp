// Collection::importSealed: a sealed gallery snapshot (docs/index-snapshot.md) read from its file and opened
// straight into the rows the collection keeps. Each thread takes the next chunk, reads it (pread), and
// deciphers its scales, code sums and codes into their places in new chunks of rows, a few dozen rows of
// codes at a time, each checked as importCodes checks it while still in cache; the keys go to a staging
// buffer. A chunk counts only once its tag verifies; the key map is built from the verified chunks in row
// order by whichever thread is free (one at a time). Only when every chunk opened, every row is valid and
// every key is mapped do the new rows replace the collection's content, under the lock: a search never sees
// a row of a snapshot that did not open whole. AES-256-GCM is the process's OpenSSL (core/sealed/aes_gcm.h).
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "core/sealed/aes_gcm.h"
#include "core/sealed/cipher_feed.h"
#include "core/index/guarded.h"
#include "core/index/partition.h"
#include "core/index/row_source.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

SealedRows::~SealedRows() { explicit_bzero(key, sizeof(key)); }

namespace {

using crypto::aesGcmAvailable;
using crypto::AesGcmOpener;
using crypto::kAesGcmTagBytes;

constexpr size_t kChunkHead = 8;    // u32 rows, u32 key bytes
constexpr size_t kPieceRows = 64;   // codes deciphered, then checked, this many rows at a time (45 KB at 704)
// File bytes the prefetcher asks the kernel for at a time: from a cold page cache, 8 MiB steps answered
// sooner than 64 MiB steps (docs/benchmarks.md, Figures behind code comments).
constexpr uint64_t kPrefetchStep = 8 << 20;

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint32_t readU32LE(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Where a chunk's rows and keys go.
struct ChunkPlan {
  size_t firstRow = 0;
  size_t keyAt = 0;  // in the key staging buffer
  size_t keyBytes = 0;
};

struct PartResult {
  double read = 0, open = 0, keys = 0;
  float maxScale = 0;
};

class SealedLoader {
 public:
  SealedLoader(const SealedRows& in, Storage& st, const RowShape& shape, size_t dim, const std::vector<ChunkPlan>& plan,
               std::vector<char>& keys, unsigned parts)
      : in_(in), st_(st), shape_(shape), dim_(dim), plan_(plan), keys_(keys), n_(in.chunks.size()),
        done_(new std::atomic<bool>[in.chunks.size()]), parts_(parts) {
    for (size_t i = 0; i < n_; ++i) done_[i].store(false, std::memory_order_relaxed);
  }

  // One thread's share: chunks until none is left or one failed. Never throws.
  void run(unsigned part, uint8_t* buffer) noexcept {
    PartResult& r = parts_[part];
    try {
      AesGcmOpener opener;
      if (!opener.ok()) {
        fail(SealedFault::None, IndexCode::OutOfMemory, "cannot make an AES-GCM context");
        return;
      }
      for (;;) {
        const size_t i = next_.fetch_add(1);
        if (i >= n_ || stop_.load(std::memory_order_relaxed)) break;
        if (!openChunk(i, opener, buffer, r)) break;
        done_[i].store(true);
        mapReadyKeys(r);
      }
    } catch (...) {
      fail(SealedFault::None, IndexCode::OutOfMemory, "out of memory");
    }
  }

  // The prefetcher's thread: asks the kernel to read the whole file in order, a step at a time (each call
  // returns once the reads are queued, and waits while the device's queue is full), so a cold file streams
  // from the device at its full speed ahead of the threads, whose own reads alternate between chunks and
  // would look random to the kernel's read-ahead; on a file in the page cache this takes a few ms. After
  // each step it faults in the index memory of the rows read so far (zero filled by the kernel; slow where a
  // VM's host must back the pages first), so that work is done while the device reads rather than by the
  // threads that decipher (cold starts answer sooner with it: docs/benchmarks.md, Figures behind code comments).
  void prefetch() noexcept {
    if (n_ == 0) return;
    const uint64_t first = in_.chunks[0].offset, end = in_.chunks[n_ - 1].offset + in_.chunks[n_ - 1].length;
    size_t populated = 0;
    bool canPopulate = true;
    for (uint64_t at = first; at < end && !stop_.load(std::memory_order_relaxed); at += kPrefetchStep) {
      const uint64_t step = std::min(kPrefetchStep, end - at);
      posix_fadvise(in_.fd, off_t(at), off_t(step), POSIX_FADV_WILLNEED);
      const size_t rows = size_t(double(at + step - first) / double(end - first) * double(in_.count));
      const size_t upTo = std::min(st_.chunks.size(), (rows + shape_.chunkRows - 1) / shape_.chunkRows);
      while (canPopulate && populated < upTo && !stop_.load(std::memory_order_relaxed))
        canPopulate = st_.chunks[populated++]->codes.populate();
    }
  }

  // Maps the keys of verified chunks not yet mapped (after the threads: whatever is left).
  void mapReadyKeys(PartResult& r) {
    for (;;) {
      if (mapping_.exchange(true)) return;  // another thread maps; it looks again after letting go
      const double t0 = seconds();
      size_t i = mapped_.load();
      while (i < n_ && !stop_.load(std::memory_order_relaxed) && done_[i].load()) {
        if (!mapKeys(i)) break;
        mapped_.store(++i);
      }
      r.keys += seconds() - t0;
      mapping_.store(false);
      // A chunk that became ready while this thread held the flag: its thread found the flag taken.
      i = mapped_.load();
      if (i >= n_ || stop_.load(std::memory_order_relaxed) || !done_[i].load()) return;
    }
  }

  bool failed() const { return stop_.load(); }
  bool allMapped() const { return mapped_.load() == n_; }
  SealedFault fault() const { return fault_; }
  IndexResult result() const { return result_; }
  PartResult& part(unsigned p) { return parts_[p]; }

  // The first failure wins; the others stop at their next chunk.
  bool fail(SealedFault f, IndexCode code, const char* detail) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_.load()) {
      fault_ = f;
      try {
        result_ = IndexResult::fail(code, detail);
      } catch (...) {
        result_.code = code;
      }
      stop_.store(true);
    }
    return false;
  }

 private:
  bool openChunk(size_t i, AesGcmOpener& o, uint8_t* buf, PartResult& r) {
    const SealedChunk& c = in_.chunks[i];
    const ChunkPlan& p = plan_[i];
    const size_t rows = c.rows, stride = shape_.stride, chunkRows = shape_.chunkRows;
    const double t0 = seconds();
    const double read0 = r.read;
    const uint64_t cipherBytes = c.length - kAesGcmTagBytes;
    uint8_t tag[kAesGcmTagBytes];
    for (size_t got = 0; got < sizeof(tag);) {
      const ssize_t n = pread(in_.fd, tag + got, sizeof(tag) - got, off_t(c.offset + cipherBytes + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(SealedFault::Read, IndexCode::BadArgument, "snapshot file cannot be read");
      if (n == 0) return fail(SealedFault::Cut, IndexCode::BadArgument, "snapshot file cut short");
      got += size_t(n);
    }
    r.read += seconds() - t0;

    CipherFeed feed(in_.fd, c.offset, cipherBytes, buf, o, &r.read);
    bool ok = o.begin(in_.key, c.nonce.data(), c.nonce.size(), c.aad.data(), c.aad.size());
    uint8_t head[kChunkHead];
    ok = ok && feed.next(kChunkHead, head);
    // Scales, then code sums: each into the rows' chunks (a snapshot chunk spans two or three of them).
    for (int array = 0; array < 2 && ok; ++array) {
      for (size_t row = 0; row < rows && ok;) {
        const size_t slot = p.firstRow + row;
        Chunk* ch = st_.chunks[slot / chunkRows].get();
        const size_t in = slot % chunkRows, k = std::min(rows - row, chunkRows - in);
        uint8_t* dest = array == 0 ? reinterpret_cast<uint8_t*>(ch->scale + in) : reinterpret_cast<uint8_t*>(ch->sums + in);
        ok = feed.next(k * 4, dest);
        row += k;
      }
    }
    // Codes, a piece at a time, each row checked right after it is deciphered. A bad row is reported only
    // once the tag verifies: a chunk that does not open is that, whatever its bytes look like.
    bool badRow = false;
    float maxScale = 0;
    for (size_t row = 0; row < rows && ok;) {
      const RowView rv = rowAt(st_, p.firstRow + row, shape_);
      const size_t k = std::min({rows - row, chunkRows - rv.row, kPieceRows});
      ok = feed.next(k * stride, reinterpret_cast<uint8_t*>(rv.code));
      if (!ok) break;
      for (size_t j = 0; j < k; ++j) {
        const float scale = rv.chunk->scale[rv.row + j];
        badRow |= !validCodeRow(rv.code + j * stride, dim_, stride, scale, rv.chunk->sums[rv.row + j]);
        maxScale = std::max(maxScale, scale);
      }
      row += k;
    }
    ok = ok && feed.next(p.keyBytes, reinterpret_cast<uint8_t*>(keys_.data() + p.keyAt));
    if (!ok) {
      if (feed.error() == FeedError::Read)
        return fail(SealedFault::Read, IndexCode::BadArgument, "snapshot file cannot be read");
      if (feed.error() == FeedError::Cut) return fail(SealedFault::Cut, IndexCode::BadArgument, "snapshot file cut short");
      return fail(SealedFault::None, IndexCode::Internal, "AES-GCM failed");
    }
    const bool authentic = o.finish(tag);
    r.open += seconds() - t0 - (r.read - read0);
    if (!authentic) {
      return fail(SealedFault::Open, IndexCode::BadArgument,
                  "snapshot chunk does not open (damaged, cut short, or another store's key)");
    }
    if (readU32LE(head) != rows || readU32LE(head + 4) != p.keyBytes)
      return fail(SealedFault::Format, IndexCode::BadArgument, "snapshot chunk does not match its header");
    if (badRow) {
      return fail(SealedFault::None, IndexCode::BadArgument,
                  "a row of the snapshot is not a valid code row (code out of range, padding, code sum or scale)");
    }
    r.maxScale = std::max(r.maxScale, maxScale);
    return true;
  }

  // Chunk i's keys ('\0' between them, one per row) into the key map, at the chunk's rows' slots: a batch
  // of keys split and hashed and their buckets prefetched, then added.
  bool mapKeys(size_t i) {
    constexpr size_t kBatch = 16;
    const ChunkPlan& p = plan_[i];
    const size_t rows = in_.chunks[i].rows;
    const char* key = keys_.data() + p.keyAt;
    size_t left = p.keyBytes;
    if (rows == 0)
      return left == 0 || fail(SealedFault::None, IndexCode::BadArgument, "snapshot keys and rows differ in count");
    std::string_view batch[kBatch];
    uint64_t hashes[kBatch];
    for (size_t row = 0; row < rows;) {
      const size_t k = std::min(kBatch, rows - row);
      for (size_t j = 0; j < k; ++j) {
        const char* end = static_cast<const char*>(std::memchr(key, 0, left));
        if ((row + j + 1 < rows) != (end != nullptr))
          return fail(SealedFault::None, IndexCode::BadArgument, "snapshot keys and rows differ in count");
        const size_t length = end ? size_t(end - key) : left;
        if (length == 0) return fail(SealedFault::None, IndexCode::BadArgument, "empty key");
        if (length > KeyTable::kMaxKeyBytes)
          return fail(SealedFault::None, IndexCode::BadArgument, "key longer than 65535 bytes");
        batch[j] = std::string_view(key, length);
        hashes[j] = KeyTable::hashOf(batch[j]);
        st_.keys.prefetch(hashes[j]);
        if (end) {
          left -= length + 1;
          key = end + 1;
        }
      }
      for (size_t j = 0; j < k; ++j) {
        uint32_t slot;
        if (!st_.keys.add(batch[j], hashes[j], &slot))
          return fail(SealedFault::None, IndexCode::BadArgument, "the snapshot holds a key twice");
        if (slot != p.firstRow + row + j) return fail(SealedFault::None, IndexCode::Internal, "key map out of order");
      }
      row += k;
    }
    return true;
  }

  const SealedRows& in_;
  Storage& st_;
  const RowShape shape_;
  const size_t dim_;
  const std::vector<ChunkPlan>& plan_;
  std::vector<char>& keys_;
  const size_t n_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::atomic<size_t> next_{0}, mapped_{0};
  std::atomic<bool> mapping_{false}, stop_{false};
  std::mutex mu_;
  SealedFault fault_ = SealedFault::None;
  IndexResult result_;
  std::vector<PartResult> parts_;
};

// Threads joined however the scope is left (a joinable std::thread must not be destroyed).
struct JoinedThreads {
  std::vector<std::thread> threads;
  ~JoinedThreads() { joinAll(); }
  void joinAll() {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
};

// Wipes the staging copy of the keys (person ids) however the import ends.
struct WipedKeys {
  std::vector<char> bytes;
  ~WipedKeys() {
    if (!bytes.empty()) explicit_bzero(bytes.data(), bytes.size());
  }
};

}  // namespace

bool sealedImportAvailable(std::string* why) { return aesGcmAvailable(why); }

IndexResult Collection::importSealed(const SealedRows& in, unsigned threads, SealedStats* stats, SealedFault* fault) {
  *stats = SealedStats{};
  *fault = SealedFault::None;
  if (hasVectors())
    return IndexResult::fail(IndexCode::BadArgument,
                             "codes alone cannot fill a collection that keeps float32 templates (make it without vectors)");
  std::string why;
  if (!aesGcmAvailable(&why)) {
    *fault = SealedFault::Unavailable;
    return IndexResult::fail(IndexCode::BadArgument, why);
  }
  if (in.stride != stride_)
    return IndexResult::fail(IndexCode::BadArgument, "the snapshot's stride differs from the collection's");
  if (in.count > UINT32_MAX) return IndexResult::fail(IndexCode::BadArgument, "too many rows");
  return guarded([&]() -> IndexResult {
    // Where each chunk's rows and keys go; its key bytes follow from its length.
    const size_t n = in.chunks.size();
    std::vector<ChunkPlan> plan(n);
    size_t rows = 0, keyBytes = 0;
    for (size_t i = 0; i < n; ++i) {
      const SealedChunk& c = in.chunks[i];
      const uint64_t fixed = kChunkHead + uint64_t(c.rows) * (8 + stride_) + kAesGcmTagBytes;
      if (c.length < fixed || c.length > (uint64_t(1) << 31) || c.nonce.empty() || rows + c.rows > in.count) {
        *fault = SealedFault::Format;
        return IndexResult::fail(IndexCode::BadArgument, "snapshot chunk does not match its header");
      }
      plan[i] = ChunkPlan{rows, keyBytes, size_t(c.length - fixed)};
      rows += c.rows;
      keyBytes += plan[i].keyBytes;
    }
    if (rows != in.count) {
      *fault = SealedFault::Format;
      return IndexResult::fail(IndexCode::BadArgument, "snapshot chunks and row count differ");
    }

    Storage ns;
    if (!reserveRows(ns, rows, shape_)) return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate index rows");
    ns.keys.reserveMore(rows, keyBytes);
    WipedKeys keys;
    keys.bytes.resize(keyBytes);
    const unsigned T = unsigned(std::max<size_t>(1, std::min<size_t>(threads ? threads : hardwareThreads(), n)));
    std::vector<std::unique_ptr<uint8_t[]>> buffers;
    for (unsigned p = 0; p < T; ++p) buffers.emplace_back(new uint8_t[kCipherFeedPiece]);

    SealedLoader loader(in, ns, shape_, dim_, plan, keys.bytes, T);
    JoinedThreads prefetcher, workers;
    try {
      prefetcher.threads.emplace_back([&loader] { loader.prefetch(); });
    } catch (...) {
      // reads without it
    }
    for (unsigned p = 1; p < T; ++p) {
      try {
        workers.threads.emplace_back([&loader, &buffers, p] { loader.run(p, buffers[p].get()); });
      } catch (...) {
        break;  // the chunks are shared out through the loader: fewer threads still do them all
      }
    }
    loader.run(0, buffers[0].get());
    workers.joinAll();
    prefetcher.joinAll();  // at once after a failure: it stops at its next step
    if (!loader.failed()) loader.mapReadyKeys(loader.part(0));
    if (!loader.failed() && (!loader.allMapped() || ns.keys.size() != rows))
      loader.fail(SealedFault::None, IndexCode::Internal, "snapshot keys not all mapped");
    for (unsigned p = 0; p < T; ++p) {
      const PartResult& r = loader.part(p);
      stats->readSeconds += r.read;
      stats->openSeconds += r.open;
      stats->keySeconds += r.keys;
      ns.maxScale = std::max(ns.maxScale, r.maxScale);
    }
    stats->threads = unsigned(workers.threads.size() + 1);
    if (loader.failed()) {
      *fault = loader.fault();
      return loader.result();
    }
    ns.n = rows;
    stats->rows = rows;
    {
      std::lock_guard<RwGate> lock(gate_);
      std::swap(ns, st_);
      publish();
    }
    return IndexResult{};  // the old content (now in ns) is freed outside the lock
  });
}

}  // namespace facecheck::index
