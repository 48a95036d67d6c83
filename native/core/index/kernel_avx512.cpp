// AVX-512 kernels (file built with -mavx512f/bw/vl/dq/vnni -mfma). Two kernels live here:
//  - "avx512": F/BW/VL only. Codes are sign-extended to int16 and multiplied with vpmaddwd against the
//    query kept as int16 (exact, cannot saturate). Compiled with VNNI switched off by pragma so that the
//    compiler cannot fuse vpmaddwd+vpaddd into vpdpwssd: it must run on CPUs without VNNI (Skylake-X).
//  - "avx512vnni": vpdpbusd (u8 x s8, 4 products per int32 lane, no saturation). The query is stored
//    offset to unsigned (q + 128, i.e. q ^ 0x80), so the raw sum is dot + 128 * sum(row codes); the row
//    sums are kept by the index and subtracted here.
#include "core/index/kernels.h"

// VNNI off for everything up to the VNNI section (set before <immintrin.h> so that the intrinsics are
// declared for this reduced target too).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("no-avx512vnni")
#define FACE_CHECK_VNNI_PRAGMA 1
// GCC 12's AVX-512 headers self-initialise a dummy operand (__Y = __Y) and then warn about it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace facecheck::index {
namespace {

inline int32_t hsum(__m512i v) { return _mm512_reduce_add_epi32(v); }

// {sum a, sum b, sum c, sum d}.
inline __m128i hsum4(__m512i a, __m512i b, __m512i c, __m512i d) {
  __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

size_t select(const int32_t* raw, const float* row_scale, size_t nr, float qscale, float thr, uint32_t* idx,
              float* score) {
  size_t n = 0;
  const __m512 vq = _mm512_set1_ps(qscale), vt = _mm512_set1_ps(thr);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (size_t r = 0; r < nr; r += 16) {
    __mmask16 live = nr - r >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (nr - r)) - 1);
    __m512 s = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(live, raw + r));
    s = _mm512_mul_ps(s, _mm512_maskz_loadu_ps(live, row_scale + r));
    s = _mm512_mul_ps(s, vq);
    __mmask16 m = _mm512_mask_cmp_ps_mask(live, s, vt, _CMP_GE_OQ);
    if (m) {
      __m512i ids = _mm512_add_epi32(iota, _mm512_set1_epi32(int(r)));
      _mm512_mask_compressstoreu_epi32(idx + n, m, ids);
      _mm512_mask_compressstoreu_ps(score + n, m, s);
      n += size_t(__builtin_popcount(unsigned(m)));
    }
  }
  return n;
}

float dotF32(const float* a, const float* b, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), a1);
  }
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), a0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

uint64_t stream(const void* p, size_t bytes) {
  const __m512i* v = static_cast<const __m512i*>(p);
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  size_t n = bytes / 64, i = 0;
  for (; i + 4 <= n; i += 4) {
    a = _mm512_xor_si512(a, _mm512_load_si512(v + i));
    b = _mm512_xor_si512(b, _mm512_load_si512(v + i + 1));
    c = _mm512_xor_si512(c, _mm512_load_si512(v + i + 2));
    d = _mm512_xor_si512(d, _mm512_load_si512(v + i + 3));
  }
  for (; i < n; ++i) a = _mm512_xor_si512(a, _mm512_load_si512(v + i));
  a = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
  alignas(64) uint64_t w[8];
  _mm512_store_si512(w, a);
  return w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4] ^ w[5] ^ w[6] ^ w[7];
}

// ---- "avx512": int16 widening ----

size_t preparedBytesBw(size_t stride) { return stride * sizeof(int16_t); }

void prepareBw(const int8_t* q, size_t stride, void* out) {
  int16_t* o = static_cast<int16_t*>(out);
  for (size_t i = 0; i < stride; i += 32) {
    __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i)));
    _mm512_store_si512(o + i, w);
  }
}

// Rows are taken one at a time, in address order (the scan is a pure sequential stream, which the
// hardware prefetchers follow at full memory bandwidth; interleaving several rows measured slower), against
// Q queries at once so that a row is fetched from memory once per block of queries.

// Stores the Q results of one row: out[j * out_stride] for j < Q.
template <int Q>
inline void storeRow(const __m512i* acc, int32_t bias, int32_t* out, size_t out_stride) {
  if constexpr (Q == 4) {
    __m128i s = _mm_sub_epi32(hsum4(acc[0], acc[1], acc[2], acc[3]), _mm_set1_epi32(bias));
    out[0] = _mm_extract_epi32(s, 0);
    out[out_stride] = _mm_extract_epi32(s, 1);
    out[2 * out_stride] = _mm_extract_epi32(s, 2);
    out[3 * out_stride] = _mm_extract_epi32(s, 3);
  } else {
    for (int j = 0; j < Q; ++j) out[j * out_stride] = hsum(acc[j]) - bias;
  }
}

template <int Q>
inline void rowBw(const int16_t* q, const int8_t* x, size_t stride, int32_t* out, size_t out_stride) {
  __m512i acc[Q];
  for (int j = 0; j < Q; ++j) acc[j] = _mm512_setzero_si512();
  for (size_t c = 0; c < stride; c += 32) {
    const __m512i xv = _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(x + c)));
    for (int j = 0; j < Q; ++j) acc[j] = _mm512_add_epi32(acc[j], _mm512_madd_epi16(_mm512_load_si512(q + j * stride + c), xv));
  }
  storeRow<Q>(acc, 0, out, out_stride);
}

void scanBw(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride, const int32_t*,
            int32_t* out, size_t out_stride) {
  const int16_t* q = static_cast<const int16_t*>(prepared);
  for (size_t r = 0; r < nr; ++r) {
    const int8_t* x = rows + r * stride;
    size_t j = 0;
    for (; j + 4 <= nq; j += 4) rowBw<4>(q + j * stride, x, stride, out + j * out_stride + r, out_stride);
    switch (nq - j) {
      case 3: rowBw<3>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      case 2: rowBw<2>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      case 1: rowBw<1>(q + j * stride, x, stride, out + j * out_stride + r, out_stride); break;
      default: break;
    }
  }
}

int32_t dotI8Bw(const int8_t* a, const int8_t* b, size_t n) {
  __m512i acc = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 32) {
    __mmask32 m = n - i >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << (n - i)) - 1);
    __m512i va = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, a + i));
    __m512i vb = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, b + i));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(va, vb));
  }
  return hsum(acc);
}

// ---- "avx512vnni": vpdpbusd ----
#if defined(FACE_CHECK_VNNI_PRAGMA)
#pragma GCC pop_options
#endif

size_t preparedBytesVnni(size_t stride) { return stride; }

void prepareVnni(const int8_t* q, size_t stride, void* out) {
  const __m512i bias = _mm512_set1_epi8(char(0x80));
  uint8_t* o = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < stride; i += 64) _mm512_store_si512(o + i, _mm512_xor_si512(_mm512_loadu_si512(q + i), bias));
}

template <int Q>
inline void rowVnni(const uint8_t* q, const int8_t* x, size_t stride, int32_t bias, int32_t* out, size_t out_stride) {
  __m512i acc[Q];
  for (int j = 0; j < Q; ++j) acc[j] = _mm512_setzero_si512();
  for (size_t c = 0; c < stride; c += 64) {
    const __m512i xv = _mm512_load_si512(x + c);
    for (int j = 0; j < Q; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], _mm512_load_si512(q + j * stride + c), xv);
  }
  storeRow<Q>(acc, bias, out, out_stride);
}

void scanVnni(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride,
              const int32_t* row_sums, int32_t* out, size_t out_stride) {
  const uint8_t* q = static_cast<const uint8_t*>(prepared);
  for (size_t r = 0; r < nr; ++r) {
    const int8_t* x = rows + r * stride;
    const int32_t bias = 128 * row_sums[r];  // (q + 128) . x = q . x + 128 * sum(x)
    size_t j = 0;
    for (; j + 4 <= nq; j += 4) rowVnni<4>(q + j * stride, x, stride, bias, out + j * out_stride + r, out_stride);
    switch (nq - j) {
      case 3: rowVnni<3>(q + j * stride, x, stride, bias, out + j * out_stride + r, out_stride); break;
      case 2: rowVnni<2>(q + j * stride, x, stride, bias, out + j * out_stride + r, out_stride); break;
      case 1: rowVnni<1>(q + j * stride, x, stride, bias, out + j * out_stride + r, out_stride); break;
      default: break;
    }
  }
}

int32_t dotI8Vnni(const int8_t* a, const int8_t* b, size_t n) {
  const __m512i bias = _mm512_set1_epi8(char(0x80)), ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512(), sumb = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 64) {
    __mmask64 m = n - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (n - i)) - 1;
    __m512i va = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, a + i), bias);  // a + 128 as u8
    __m512i vb = _mm512_maskz_loadu_epi8(m, b + i);
    acc = _mm512_dpbusd_epi32(acc, va, vb);
    sumb = _mm512_dpbusd_epi32(sumb, ones, vb);
  }
  return hsum(acc) - 128 * hsum(sumb);
}

const Kernel kAvx512 = {"avx512", preparedBytesBw, prepareBw, scanBw, select, dotI8Bw, dotF32, stream};
const Kernel kAvx512Vnni = {"avx512vnni", preparedBytesVnni, prepareVnni, scanVnni, select, dotI8Vnni, dotF32, stream};

}  // namespace

const Kernel* avx512Kernel() { return &kAvx512; }
const Kernel* avx512VnniKernel() { return &kAvx512Vnni; }

}  // namespace facecheck::index
