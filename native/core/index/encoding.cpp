// Normalisation and int8 quantisation of templates and queries (declared in similarity_index.h).
#include "core/index/similarity_index.h"

#include <cmath>
#include <cstring>

namespace facecheck::index {

// These run for every template and query, in the baseline instruction set: loops are written with eight
// explicit lanes so that the compiler vectorises them without reassociating anything (the results do not
// depend on the compiler's choices, nor on the SIMD kernel in use).

namespace {
// max |v_i| over eight lanes, and whether some v_i is a NaN or an infinity.
__attribute__((always_inline)) inline float maxAbs(const float* v, size_t dim, bool* nonFinite) {
  float m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t bad[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (size_t l = 0; l < 8; ++l) {
      uint32_t b;
      std::memcpy(&b, v + i + l, 4);
      bad[l] |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
      const float a = std::fabs(v[i + l]);
      m[l] = a > m[l] ? a : m[l];
    }
  for (; i < dim; ++i) {
    uint32_t b;
    std::memcpy(&b, v + i, 4);
    bad[0] |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
    const float a = std::fabs(v[i]);
    m[0] = a > m[0] ? a : m[0];
  }
  float r = 0;
  uint32_t any = 0;
  for (size_t l = 0; l < 8; ++l) {
    r = m[l] > r ? m[l] : r;
    any |= bad[l];
  }
  if (nonFinite) *nonFinite = any != 0;
  return r;
}

// 1 / |v|, computed on v / maxabs (maxabs > 0) so that the squares stay in range for any finite input.
__attribute__((always_inline)) inline float inverseNorm(const float* v, size_t dim, float maxabs) {
  const float pre = 1.0f / maxabs;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (size_t l = 0; l < 8; ++l) {
      const float x = v[i + l] * pre;
      acc[l] += x * x;
    }
  float ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < dim; ++i) {
    const float x = v[i] * pre;
    ss += x * x;
  }
  return pre / std::sqrt(ss);
}

// codes_j = round(v_j * q) clamped to [-127, 127] (half away from zero: vectorisable, unlike nearbyint);
// returns the sum of the codes.
__attribute__((always_inline)) inline int32_t quantiseRow(const float* v, size_t dim, float q, int8_t* codes) {
  int32_t s = 0;
  for (size_t j = 0; j < dim; ++j) {
    float x = v[j] * q;
    x = x + (x >= 0.0f ? 0.5f : -0.5f);
    x = x > 127.0f ? 127.0f : (x < -127.0f ? -127.0f : x);
    const int32_t c = int32_t(x);
    codes[j] = int8_t(c);
    s += c;
  }
  return s;
}
}  // namespace

// The bulk-load and write path: normalise + quantise in one go (4 passes over the row instead of 5). On
// x86-64 it is also compiled for AVX2 and picked once at run time; both builds run the same IEEE
// operations lane by lane (no FMA), so the results are bit-identical to normalise() then quantise().
// (A plain function pointer rather than an ifunc: ifunc resolvers run before the sanitizer runtimes start.)
namespace {
__attribute__((always_inline)) inline bool encodeImpl(const float* v, size_t dim, size_t stride, float* vec,
                                                      int8_t* codes, float* scale, int32_t* sum) {
  bool bad = false;
  const float maxabs = maxAbs(v, dim, &bad);
  if (bad) return false;
  std::memset(codes + dim, 0, stride - dim);
  if (maxabs == 0) {
    std::memset(vec, 0, dim * sizeof(float));
    std::memset(codes, 0, dim);
    *scale = 0;
    *sum = 0;
    return true;
  }
  const float inv = inverseNorm(v, dim, maxabs);
  for (size_t j = 0; j < dim; ++j) vec[j] = v[j] * inv;
  // max |vec_j| without another pass: rounding is monotonic and symmetric, so it is maxabs * inv exactly.
  const float m = maxabs * inv;
  const int32_t s = quantiseRow(vec, dim, 127.0f / m, codes);
  *scale = m / 127.0f;
  *sum = s;
  return true;
}

bool encodeBaseline(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes, float* scale, int32_t* sum) {
  return encodeImpl(v, dim, stride, vec, codes, scale, sum);
}

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
__attribute__((target("avx2"))) bool encodeAvx2(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes,
                                                float* scale, int32_t* sum) {
  return encodeImpl(v, dim, stride, vec, codes, scale, sum);
}
#endif

using EncodeFn = bool (*)(const float*, size_t, size_t, float*, int8_t*, float*, int32_t*);

EncodeFn pickEncode() {
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return encodeAvx2;
#endif
  return encodeBaseline;
}
}  // namespace

bool encode(const float* v, size_t dim, size_t stride, float* vec, int8_t* codes, float* scale, int32_t* sum) {
  static const EncodeFn fn = pickEncode();
  return fn(v, dim, stride, vec, codes, scale, sum);
}

bool normalise(const float* v, size_t dim, float* out) {
  bool bad = false;
  const float maxabs = maxAbs(v, dim, &bad);
  if (bad) return false;
  if (maxabs == 0) {
    std::memset(out, 0, dim * sizeof(float));
    return true;
  }
  const float inv = inverseNorm(v, dim, maxabs);
  for (size_t j = 0; j < dim; ++j) out[j] = v[j] * inv;
  return true;
}

float quantise(const float* v, size_t dim, size_t stride, int8_t* codes, int32_t* sum) {
  const float maxabs = maxAbs(v, dim, nullptr);
  std::memset(codes + dim, 0, stride - dim);
  if (maxabs == 0) {
    std::memset(codes, 0, dim);
    *sum = 0;
    return 0.0f;
  }
  *sum = quantiseRow(v, dim, 127.0f / maxabs, codes);
  return maxabs / 127.0f;
}

}  // namespace facecheck::index
