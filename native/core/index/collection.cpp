// Collection: one-template writes and removes, clearing, and the size/memory statistics.
// Bulk loads are in bulk_load.cpp, searches and reads in collection_search.cpp and collection_reads.cpp.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/index/guarded.h"
#include "core/index/similarity_index.h"
#include "core/index/row_storage.h"

namespace facecheck::index {

Collection::Collection(size_t dim, bool withVectors)
    : dim_(dim), stride_(roundUp(dim ? dim : 1, kCodeAlign)), shape_(rowShape(dim, withVectors)) {}
Collection::~Collection() = default;

void Collection::publish() {
  size_.store(st_.n, std::memory_order_release);
  chunkCount_.store(st_.chunks.size(), std::memory_order_release);
  keyBytes_.store(st_.keys.bytes(), std::memory_order_release);
}

CollectionStats Collection::stats() const {
  CollectionStats s;
  s.size = size();
  s.dim = dim_;
  s.codeStride = stride_;
  s.vectors = hasVectors();
  s.bytesAllocated = chunkCount_.load(std::memory_order_acquire) * chunkBytes(shape_);
  s.bytesKeys = keyBytes_.load(std::memory_order_acquire);
  return s;
}

IndexResult Collection::write(std::string_view key, const float* v, WriteMode mode, bool* added) {
  if (added) *added = false;
  if (key.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
  if (key.size() > KeyTable::kMaxKeyBytes) return IndexResult::fail(IndexCode::BadArgument, "key longer than 65535 bytes");
  if (!v) return IndexResult::fail(IndexCode::BadArgument, "missing template");
  return guarded([&]() -> IndexResult {
    std::vector<float> norm(dim_);
    AlignedArray<int8_t> codes(stride_);
    int32_t sum = 0;
    float scale = 0;
    if (!encode(v, dim_, stride_, norm.data(), codes.data(), &scale, &sum))
      return IndexResult::fail(IndexCode::BadArgument, "template has a NaN or an infinity");

    std::lock_guard<RwGate> lock(gate_);
    uint32_t slot = st_.keys.find(key);
    if (slot != KeyTable::kNone) {
      if (mode == WriteMode::Insert) return IndexResult::fail(IndexCode::KeyExists, "key already in the collection");
      // replace in place, keeping the enrolment order
    } else {
      if (mode == WriteMode::Replace) return IndexResult::fail(IndexCode::KeyNotFound, "key not in the collection");
      if (!reserveRows(st_, st_.n + 1, shape_)) {
        chunkCount_.store(st_.chunks.size());
        return IndexResult::fail(IndexCode::OutOfMemory, "cannot allocate index rows");
      }
      st_.keys.add(key, &slot);  // slot n; throws (nothing changed) when memory runs out
      st_.n++;
      if (added) *added = true;
    }
    RowView rv = rowAt(st_, slot, shape_);
    std::memcpy(rv.code, codes.data(), stride_);
    if (rv.vec) std::memcpy(rv.vec, norm.data(), dim_ * sizeof(float));
    rv.chunk->scale[rv.row] = scale;
    rv.chunk->sums[rv.row] = sum;
    st_.maxScale = std::max(st_.maxScale, scale);
    publish();
    return {};
  });
}

IndexResult Collection::remove(std::string_view key, bool* removed) {
  *removed = false;
  return guarded([&]() -> IndexResult {
    std::lock_guard<RwGate> lock(gate_);
    const uint32_t slot = st_.keys.find(key);
    if (slot == KeyTable::kNone) return {};
    const size_t last = st_.n - 1;
    st_.keys.removeSwapLast(slot);  // the last key moves to `slot`, as its row does below
    RowView dst = rowAt(st_, slot, shape_);
    RowView src = rowAt(st_, last, shape_);
    if (slot != last) {
      std::memcpy(dst.code, src.code, stride_);
      if (dst.vec) std::memcpy(dst.vec, src.vec, dim_ * sizeof(float));
      dst.chunk->scale[dst.row] = src.chunk->scale[src.row];
      dst.chunk->sums[dst.row] = src.chunk->sums[src.row];
    }
    // Leave no trace of the removed template: the vacated last row is zeroed.
    wipeRow(src, shape_);
    st_.n--;
    if (st_.n == 0) st_.maxScale = 0;
    trimChunks(st_, shape_);
    publish();
    *removed = true;
    return {};
  });
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
  for (size_t s = n0; s < st_.keys.size(); ++s)
    if (zeroRows && s / shape_.chunkRows < st_.chunks.size()) wipeRow(rowAt(st_, s, shape_), shape_);
  st_.keys.truncate(n0);
  st_.n = n0;
  trimChunks(st_, shape_);
  publish();
}

}  // namespace facecheck::index
