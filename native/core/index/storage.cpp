#include "core/index/storage.h"

#include <cstring>
#include <new>

namespace facecheck::index {

std::unique_ptr<Chunk> Chunk::make(size_t stride, size_t vstride) {
  std::unique_ptr<Chunk> c(new (std::nothrow) Chunk());
  if (!c) return nullptr;
  c->codes = MappedBuffer(kChunkRows * stride, true);
  // Not huge: the float32 rows are only read for re-ranking a few candidates, and asking for huge pages
  // here made start-up bulk loads slower and erratic (direct compaction: 3.2-7.0 s vs 2.8-3.0 s for 1M).
  if (vstride) c->vecs = MappedBuffer(kChunkRows * vstride * sizeof(float), false);
  c->meta = MappedBuffer(kChunkRows * (sizeof(float) + sizeof(int32_t)), false);
  if (!c->codes.data() || (vstride && !c->vecs.data()) || !c->meta.data()) return nullptr;
  c->scale = reinterpret_cast<float*>(c->meta.data());
  c->sums = reinterpret_cast<int32_t*>(c->meta.data() + kChunkRows * sizeof(float));
  return c;
}

Storage::Storage() = default;
Storage::~Storage() = default;
Storage::Storage(Storage&&) noexcept = default;
Storage& Storage::operator=(Storage&&) noexcept = default;

void wipeRow(const RowView& rv, size_t stride, size_t vstride) {
  std::memset(rv.code, 0, stride);
  if (rv.vec) std::memset(rv.vec, 0, vstride * sizeof(float));
  rv.chunk->scale[rv.row] = 0;
  rv.chunk->sums[rv.row] = 0;
}

bool reserveRows(Storage& st, size_t rows, size_t stride, size_t vstride) {
  while (st.chunks.size() * kChunkRows < rows) {
    auto c = Chunk::make(stride, vstride);
    if (!c) return false;
    st.chunks.push_back(std::move(c));
  }
  return true;
}

void trimChunks(Storage& st) {
  size_t need = (st.n + kChunkRows - 1) / kChunkRows;
  while (st.chunks.size() > need + 1) st.chunks.pop_back();
}

}  // namespace facecheck::index
