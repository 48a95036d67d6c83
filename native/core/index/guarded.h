// The index's no-exception boundary: runs a body that may throw and turns what escapes into an
// IndexResult (out of memory, or an unexpected failure), so every public call returns instead of throwing.
#pragma once

#include <new>

#include "core/index/similarity_index.h"

namespace facecheck::index {

template <typename Body>
IndexResult guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return IndexResult::fail(IndexCode::OutOfMemory, "out of memory");
  } catch (...) {
    return IndexResult::fail(IndexCode::Internal, "unexpected failure");
  }
}

}  // namespace facecheck::index
