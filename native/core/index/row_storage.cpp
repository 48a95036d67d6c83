#include "core/index/row_storage.h"

#include <cstring>
#include <new>

#include "core/index/kernels.h"

namespace facecheck::index {

namespace {
constexpr size_t kMetaBytesPerRow = sizeof(float) + sizeof(int32_t);

// Code bytes of a chunk: whole huge pages when the codes fill at least half of one (they are streamed by
// every search, and huge pages scan faster), otherwise whole 4 KiB pages.
size_t codeBytes(const RowShape& s) {
  const size_t b = s.chunkRows * s.stride;
  return b >= kHugePage / 2 ? roundUp(b, kHugePage) : roundUp(b, 4096);
}
}  // namespace

RowShape rowShape(size_t dim, bool withVectors) {
  RowShape s;
  s.stride = roundUp(dim ? dim : 1, kCodeAlign);
  s.vstride = withVectors ? roundUp(dim, 16) : 0;  // a multiple of 16 floats keeps rows 64-byte aligned
  const size_t full = kChunkRows * s.stride;
  s.chunkRows = full < kHugePage ? kChunkRows : (full / kHugePage * kHugePage) / s.stride;
  return s;
}

size_t chunkBytes(const RowShape& s) {
  return codeBytes(s) + roundUp(s.chunkRows * s.vstride * sizeof(float), 4096) + roundUp(s.chunkRows * kMetaBytesPerRow, 4096);
}

std::unique_ptr<Chunk> Chunk::make(const RowShape& shape) {
  std::unique_ptr<Chunk> c(new (std::nothrow) Chunk());
  if (!c) return nullptr;
  c->codes = MappedBuffer(codeBytes(shape), true);
  // Not huge: the float32 rows are only read for re-ranking a few candidates, and asking for huge pages
  // here made start-up bulk loads slower and erratic (the kernel's direct compaction).
  if (shape.vstride) c->vecs = MappedBuffer(shape.chunkRows * shape.vstride * sizeof(float), false);
  c->meta = MappedBuffer(shape.chunkRows * kMetaBytesPerRow, false);
  if (!c->codes.data() || (shape.vstride && !c->vecs.data()) || !c->meta.data()) return nullptr;
  c->scale = reinterpret_cast<float*>(c->meta.data());
  c->sums = reinterpret_cast<int32_t*>(c->meta.data() + shape.chunkRows * sizeof(float));
  return c;
}

Storage::Storage() = default;
Storage::~Storage() = default;
Storage::Storage(Storage&&) noexcept = default;
Storage& Storage::operator=(Storage&&) noexcept = default;

void wipeRow(const RowView& rv, const RowShape& shape) {
  std::memset(rv.code, 0, shape.stride);
  if (rv.vec) std::memset(rv.vec, 0, shape.vstride * sizeof(float));
  rv.chunk->scale[rv.row] = 0;
  rv.chunk->sums[rv.row] = 0;
}

bool reserveRows(Storage& st, size_t rows, const RowShape& shape) {
  while (st.chunks.size() * shape.chunkRows < rows) {
    auto c = Chunk::make(shape);
    if (!c) return false;
    st.chunks.push_back(std::move(c));
  }
  return true;
}

void trimChunks(Storage& st, const RowShape& shape) {
  size_t need = (st.n + shape.chunkRows - 1) / shape.chunkRows;
  while (st.chunks.size() > need + 1) st.chunks.pop_back();
}

}  // namespace facecheck::index
