// Where the rows of a bulk load come from: float templates to normalise and quantise (bulkLoad), or the
// int8 rows of a snapshot to copy as they are (importCodes). Internal to core/index (baseline instruction
// set only, see mapped_buffer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/index/row_storage.h"

namespace facecheck::index {

// A row as the encoder writes it: codes in -127..127 (the kernels' exactness relies on it), zero padding
// past dim, the sum of the codes, and a finite scale in [0, 1] (max |x| of a unit vector / 127). What
// importCodes and importSealed check of every row (code_snapshot.cpp).
bool validCodeRow(const int8_t* codes, size_t dim, size_t stride, float scale, int32_t sum);

class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual size_t size() const = 0;
  virtual std::string_view key(size_t i) const = 0;
  // Whether row i can be written: checked for replaced rows before any row is written.
  virtual bool valid(size_t i, float* scratch) const = 0;
  // Writes row i (codes, scale, sum, and the float32 row when rv.vec is set); false when row i is bad.
  // `scratch` holds dim floats owned by the calling thread.
  virtual bool fill(size_t i, const RowView& rv, float* scratch) const = 0;
  // What is wrong with a row that valid() or fill() refused.
  virtual const char* badRowMessage() const = 0;
};

}  // namespace facecheck::index
