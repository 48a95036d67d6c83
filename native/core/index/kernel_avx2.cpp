// AVX2 kernel (built with -mavx2 -mfma, used only when the CPU has both).
// int8 x int8 products: the codes are sign-extended to int16 (vpmovsxbw) and multiplied with
// vpmaddwd against the query kept as int16, so no step can saturate and the sums are exact.
#include <immintrin.h>

#include "core/index/kernels.h"

namespace facecheck::index {
namespace {

size_t preparedBytes(size_t stride) { return stride * sizeof(int16_t); }

void prepare(const int8_t* q, size_t stride, void* out) {
  int16_t* o = static_cast<int16_t*>(out);
  for (size_t i = 0; i < stride; i += 16) {
    __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(o + i), w);
  }
}

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// The four horizontal sums of a, b, c, d as one vector {sum a, sum b, sum c, sum d}.
inline __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  __m256i ab = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
  __m256i cd = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
  __m256i abcd = _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
  return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

// Rows are taken one at a time, in address order (a pure sequential stream for the hardware prefetchers),
// against up to 4 queries at once.
template <int Q>
inline void row(const int16_t* q, const int8_t* x, size_t stride, int32_t* out, size_t out_stride) {
  __m256i acc[Q];
  for (int j = 0; j < Q; ++j) acc[j] = _mm256_setzero_si256();
  for (size_t c = 0; c < stride; c += 16) {
    const __m256i xv = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(x + c)));
    for (int j = 0; j < Q; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + j * stride + c)), xv));
  }
  if constexpr (Q == 4) {
    __m128i s = hsum4(acc[0], acc[1], acc[2], acc[3]);
    out[0] = _mm_extract_epi32(s, 0);
    out[out_stride] = _mm_extract_epi32(s, 1);
    out[2 * out_stride] = _mm_extract_epi32(s, 2);
    out[3 * out_stride] = _mm_extract_epi32(s, 3);
  } else {
    for (int j = 0; j < Q; ++j) out[j * out_stride] = hsum(acc[j]);
  }
}

void scan(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride, const int32_t*,
          int32_t* out, size_t out_stride) {
  const int16_t* q = static_cast<const int16_t*>(prepared);
  for (size_t r = 0; r < nr; ++r) {
    const int8_t* x = rows + r * stride;
    size_t j = 0;
    for (; j + 4 <= nq; j += 4) row<4>(q + j * stride, x, stride, out + j * out_stride + r, out_stride);
    switch (nq - j) {
      case 3: row<3>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      case 2: row<2>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      case 1: row<1>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      default: break;
    }
  }
}

size_t select(const int32_t* raw, const float* row_scale, size_t nr, float qscale, float thr, uint32_t* idx,
              float* score) {
  size_t n = 0, r = 0;
  const __m256 vq = _mm256_set1_ps(qscale), vt = _mm256_set1_ps(thr);
  alignas(32) float tmp[8];
  for (; r + 8 <= nr; r += 8) {
    __m256 s = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(raw + r)));
    s = _mm256_mul_ps(s, _mm256_loadu_ps(row_scale + r));
    s = _mm256_mul_ps(s, vq);
    unsigned m = unsigned(_mm256_movemask_ps(_mm256_cmp_ps(s, vt, _CMP_GE_OQ)));
    if (m) {
      _mm256_store_ps(tmp, s);
      while (m) {
        unsigned b = unsigned(__builtin_ctz(m));
        idx[n] = uint32_t(r + b);
        score[n] = tmp[b];
        ++n;
        m &= m - 1;
      }
    }
  }
  for (; r < nr; ++r) {
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

int32_t dotI8(const int8_t* a, const int8_t* b, size_t n) {
  __m256i acc = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i va = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256i vb = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(va, vb));
  }
  int32_t s = hsum(acc);
  for (; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

float dotF32(const float* a, const float* b, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), a1);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), a0);
  __m256 v = _mm256_add_ps(a0, a1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  float t = _mm_cvtss_f32(s);
  for (; i < n; ++i) t += a[i] * b[i];
  return t;
}

uint64_t stream(const void* p, size_t bytes) {
  const __m256i* v = static_cast<const __m256i*>(p);
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t n = bytes / 32, i = 0;
  for (; i + 4 <= n; i += 4) {
    a = _mm256_xor_si256(a, _mm256_load_si256(v + i));
    b = _mm256_xor_si256(b, _mm256_load_si256(v + i + 1));
    c = _mm256_xor_si256(c, _mm256_load_si256(v + i + 2));
    d = _mm256_xor_si256(d, _mm256_load_si256(v + i + 3));
  }
  for (; i < n; ++i) a = _mm256_xor_si256(a, _mm256_load_si256(v + i));
  a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  __m128i s = _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  return uint64_t(_mm_cvtsi128_si64(s)) ^ uint64_t(_mm_extract_epi64(s, 1));
}

const Kernel kAvx2 = {"avx2", preparedBytes, prepare, scan, select, dotI8, dotF32, stream};

}  // namespace

const Kernel* avx2Kernel() { return &kAvx2; }

}  // namespace facecheck::index
