// Row storage of a collection: chunks of shape.chunkRows rows (int8 codes, float32 templates unless the
// collection keeps none, scale and code sum per row) and the helpers that address, grow, shrink and wipe
// rows. Internal to core/index (baseline instruction set only, see mapped_buffer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/index/mapped_buffer.h"
#include "core/index/similarity_index.h"

namespace facecheck::index {

constexpr size_t kChunkRows = 4096;  // rows per chunk, or fewer so the codes fill whole huge pages (rowShape)

struct Chunk {
  MappedBuffer codes;  // chunkRows x stride int8
  MappedBuffer vecs;   // chunkRows x vstride float (empty when vstride is 0: no vectors)
  MappedBuffer meta;   // scale (float) and code sum (int32) per row
  float* scale = nullptr;
  int32_t* sums = nullptr;

  // Null when memory runs out.
  static std::unique_ptr<Chunk> make(const RowShape& shape);
  size_t bytes() const { return codes.size() + vecs.size() + meta.size(); }
};

// The row layout of a collection of `dim`-value templates. The code rows are padded to kCodeAlign bytes; a
// chunk holds kChunkRows rows, or fewer when their codes would end part way into a 2 MiB huge page: a
// partly used huge page is still resident in full (at 704 values, 4096 rows of codes took 4 MiB for
// 2.75 MiB of codes; 2978 rows take 2 MiB less 640 bytes).
RowShape rowShape(size_t dim, bool withVectors);
// Bytes mapped per chunk (codes, floats, scales and sums), as MappedBuffer rounds them.
size_t chunkBytes(const RowShape& shape);

struct RowView {
  int8_t* code;
  float* vec;  // null without vectors
  Chunk* chunk;
  size_t row;
};

inline RowView rowAt(const Storage& st, size_t slot, const RowShape& shape) {
  Chunk* c = st.chunks[slot / shape.chunkRows].get();
  size_t r = slot % shape.chunkRows;
  float* vec = shape.vstride ? reinterpret_cast<float*>(c->vecs.data()) + r * shape.vstride : nullptr;
  return RowView{reinterpret_cast<int8_t*>(c->codes.data()) + r * shape.stride, vec, c, r};
}

// Zeroes one row, so that nothing of a removed template stays in memory.
void wipeRow(const RowView& rv, const RowShape& shape);
// Makes room for `rows` rows; false when memory runs out (the chunks added so far stay, empty).
bool reserveRows(Storage& st, size_t rows, const RowShape& shape);
// Frees chunks beyond the one spare after the last used row.
void trimChunks(Storage& st, const RowShape& shape);

}  // namespace facecheck::index
