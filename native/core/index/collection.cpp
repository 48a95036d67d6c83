// Collection: one-template writes and removes, clearing, and the size/memory statistics.
// Bulk loads are in bulk_load.cpp, searches and reads in collection_search.cpp and collection_reads.cpp.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/index/guarded.h"
#include "core/index/similarity_index.h"
#include "core/index/storage.h"

namespace facecheck::index {

Collection::Collection(size_t dim, bool withVectors)
    : dim_(dim), stride_(roundUp(dim ? dim : 1, kCodeAlign)), shape_(rowShape(dim, withVectors)) {}
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
  s.vectors = hasVectors();
  s.bytesAllocated = chunkCount_.load(std::memory_order_acquire) * chunkBytes(shape_);
  // Map node (key string + slot + hash + next pointer + allocator overhead), bucket, slot -> entry pointer.
  s.bytesKeys = s.size * (sizeof(std::string) + 8 + 8 + 8 + 16 + 8 + 8) + keyBytes_.load(std::memory_order_acquire);
  return s;
}

IndexResult Collection::write(std::string_view key, const float* v, WriteMode mode, bool* added) {
  if (added) *added = false;
  if (key.empty()) return IndexResult::fail(IndexCode::BadArgument, "empty key");
  if (!v) return IndexResult::fail(IndexCode::BadArgument, "missing template");
  return guarded([&]() -> IndexResult {
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
      if (!reserveRows(st_, st_.n + 1, shape_)) {
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
    std::string k(key);
    std::lock_guard<RwGate> lock(gate_);
    auto it = st_.slots.find(k);
    if (it == st_.slots.end()) return {};
    const size_t slot = it->second, last = st_.n - 1;
    st_.keyBytes -= keyHeapBytes(it->first);
    st_.slots.erase(it);
    RowView dst = rowAt(st_, slot, shape_);
    RowView src = rowAt(st_, last, shape_);
    if (slot != last) {
      std::memcpy(dst.code, src.code, stride_);
      if (dst.vec) std::memcpy(dst.vec, src.vec, dim_ * sizeof(float));
      dst.chunk->scale[dst.row] = src.chunk->scale[src.row];
      dst.chunk->sums[dst.row] = src.chunk->sums[src.row];
      st_.keys[slot] = st_.keys[last];
      st_.keys[slot]->second = uint32_t(slot);
    }
    // Leave no trace of the removed template: the vacated last row is zeroed.
    wipeRow(src, shape_);
    st_.keys.pop_back();
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
  for (size_t s = n0; s < st_.keys.size(); ++s) {
    if (zeroRows && s / shape_.chunkRows < st_.chunks.size()) wipeRow(rowAt(st_, s, shape_), shape_);
    st_.keyBytes -= keyHeapBytes(st_.keys[s]->first);
    st_.slots.erase(st_.slots.find(st_.keys[s]->first));
  }
  st_.keys.resize(n0);
  st_.n = n0;
  trimChunks(st_, shape_);
  publish();
}

}  // namespace facecheck::index
