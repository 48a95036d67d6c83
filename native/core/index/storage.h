// Row storage of a collection: chunks of kChunkRows rows (int8 codes, float32 templates unless the
// collection keeps none, scale and code sum per row) and the helpers that address, grow, shrink and wipe rows. Internal to core/index (baseline
// instruction set only, see mapped_buffer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/index/mapped_buffer.h"
#include "core/index/similarity_index.h"

namespace facecheck::index {

constexpr size_t kChunkRows = 4096;  // rows per chunk (2 MiB of codes at 512-d)

struct Chunk {
  MappedBuffer codes;  // kChunkRows x stride int8
  MappedBuffer vecs;   // kChunkRows x vstride float (empty when vstride is 0: no vectors)
  MappedBuffer meta;   // scale (float) and code sum (int32) per row
  float* scale = nullptr;
  int32_t* sums = nullptr;

  // Null when memory runs out.
  static std::unique_ptr<Chunk> make(size_t stride, size_t vstride);
  size_t bytes() const { return codes.size() + vecs.size() + meta.size(); }
};

// Floats per stored template row (a multiple of 16, so rows stay 64-byte aligned); 0 without vectors.
inline size_t vectorStride(size_t dim, bool withVectors) { return withVectors ? roundUp(dim, 16) : 0; }

// Heap bytes of a key beyond the string object itself (short keys live inside it).
inline size_t keyHeapBytes(const std::string& k) { return k.size() > 15 ? k.size() + 1 : 0; }

struct RowView {
  int8_t* code;
  float* vec;  // null without vectors
  Chunk* chunk;
  size_t row;
};

inline RowView rowAt(const Storage& st, size_t slot, size_t stride, size_t vstride) {
  Chunk* c = st.chunks[slot / kChunkRows].get();
  size_t r = slot % kChunkRows;
  float* vec = vstride ? reinterpret_cast<float*>(c->vecs.data()) + r * vstride : nullptr;
  return RowView{reinterpret_cast<int8_t*>(c->codes.data()) + r * stride, vec, c, r};
}

// Zeroes one row, so that nothing of a removed template stays in memory.
void wipeRow(const RowView& rv, size_t stride, size_t vstride);
// Makes room for `rows` rows; false when memory runs out (the chunks added so far stay, empty).
bool reserveRows(Storage& st, size_t rows, size_t stride, size_t vstride);
// Frees chunks beyond the one spare after the last used row.
void trimChunks(Storage& st);

}  // namespace facecheck::index
