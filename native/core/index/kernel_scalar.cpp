// Scalar reference kernel: plain C++, compiled with the baseline flags. Every other kernel is tested
// against it (the int8 results must be bit-identical).
#include <cstring>

#include "core/index/kernels.h"

namespace facecheck::index {
namespace {

size_t preparedBytes(size_t stride) { return stride; }

void prepare(const int8_t* q, size_t stride, void* out) { std::memcpy(out, q, stride); }

int32_t dotI8(const int8_t* a, const int8_t* b, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

void scan(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride,
          const int32_t* /*row_sums*/, int32_t* out, size_t out_stride) {
  const int8_t* q = static_cast<const int8_t*>(prepared);
  for (size_t j = 0; j < nq; ++j)
    for (size_t r = 0; r < nr; ++r) out[j * out_stride + r] = dotI8(q + j * stride, rows + r * stride, stride);
}

size_t select(const int32_t* raw, const float* row_scale, size_t nr, float qscale, float thr, uint32_t* idx,
              float* score) {
  size_t n = 0;
  for (size_t r = 0; r < nr; ++r) {
    float s = float(raw[r]) * row_scale[r];
    s = s * qscale;
    if (s >= thr) {
      idx[n] = uint32_t(r);
      score[n] = s;
      ++n;
    }
  }
  return n;
}

float dotF32(const float* a, const float* b, size_t n) {
  // Eight independent partial sums: a fixed order that the compiler may vectorise lane by lane.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  float tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

uint64_t stream(const void* p, size_t bytes) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= bytes / 8; i += 4) {
    a ^= w[i];
    b ^= w[i + 1];
    c ^= w[i + 2];
    d ^= w[i + 3];
  }
  return a ^ b ^ c ^ d;
}

const Kernel kScalar = {"scalar", preparedBytes, prepare, scan, select, dotI8, dotF32, stream};

}  // namespace

const Kernel* scalarKernel() { return &kScalar; }

}  // namespace facecheck::index
