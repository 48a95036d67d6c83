// NEON kernel (aarch64, where Advanced SIMD is baseline: no extra flags). int8 x int8 products with
// vmull_s8 (exact in int16, |a*b| <= 16384) accumulated pairwise into int32 with vpadalq_s16; no step
// can saturate. (The ARMv8.2 dot-product extension, sdot, is not baseline and is not used.)
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "core/index/kernels.h"

namespace facecheck::index {
namespace {

size_t preparedBytes(size_t stride) { return stride; }

void prepare(const int8_t* q, size_t stride, void* out) { std::memcpy(out, q, stride); }

inline int32x4_t mac16(int32x4_t acc, int8x16_t a, int8x16_t b) {
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
}

// Rows one at a time in address order (a sequential stream), against up to 4 queries at once.
template <int Q>
inline void row(const int8_t* q, const int8_t* x, size_t stride, int32_t* out, size_t out_stride) {
  int32x4_t acc[Q];
  for (int j = 0; j < Q; ++j) acc[j] = vdupq_n_s32(0);
  for (size_t c = 0; c < stride; c += 16) {
    const int8x16_t xv = vld1q_s8(x + c);
    for (int j = 0; j < Q; ++j) acc[j] = mac16(acc[j], vld1q_s8(q + j * stride + c), xv);
  }
  for (int j = 0; j < Q; ++j) out[j * out_stride] = vaddvq_s32(acc[j]);
}

void scan(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride, const int32_t*,
          int32_t* out, size_t out_stride) {
  const int8_t* q = static_cast<const int8_t*>(prepared);
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
  const float32x4_t vq = vdupq_n_f32(qscale), vt = vdupq_n_f32(thr);
  for (; r + 4 <= nr; r += 4) {
    float32x4_t s = vmulq_f32(vcvtq_f32_s32(vld1q_s32(raw + r)), vld1q_f32(row_scale + r));
    s = vmulq_f32(s, vq);
    uint32x4_t m = vcgeq_f32(s, vt);
    if (vmaxvq_u32(m)) {
      float tmp[4];
      uint32_t mm[4];
      vst1q_f32(tmp, s);
      vst1q_u32(mm, m);
      for (int l = 0; l < 4; ++l)
        if (mm[l]) {
          idx[n] = uint32_t(r + l);
          score[n] = tmp[l];
          ++n;
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
  int32x4_t acc = vdupq_n_s32(0);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = mac16(acc, vld1q_s8(a + i), vld1q_s8(b + i));
  int32_t s = vaddvq_s32(acc);
  for (; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

float dotF32(const float* a, const float* b, size_t n) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = vfmaq_f32(a0, vld1q_f32(a + i), vld1q_f32(b + i));
    a1 = vfmaq_f32(a1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    a2 = vfmaq_f32(a2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    a3 = vfmaq_f32(a3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, vld1q_f32(a + i), vld1q_f32(b + i));
  float t = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; i < n; ++i) t += a[i] * b[i];
  return t;
}

uint64_t stream(const void* p, size_t bytes) {
  const uint8_t* s = static_cast<const uint8_t*>(p);
  uint8x16_t a = vdupq_n_u8(0), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    a = veorq_u8(a, vld1q_u8(s + i));
    b = veorq_u8(b, vld1q_u8(s + i + 16));
    c = veorq_u8(c, vld1q_u8(s + i + 32));
    d = veorq_u8(d, vld1q_u8(s + i + 48));
  }
  uint64x2_t w = vreinterpretq_u64_u8(veorq_u8(veorq_u8(a, b), veorq_u8(c, d)));
  return vgetq_lane_u64(w, 0) ^ vgetq_lane_u64(w, 1);
}

const Kernel kNeon = {"neon", preparedBytes, prepare, scan, select, dotI8, dotF32, stream};

}  // namespace

const Kernel* neonKernel() { return &kNeon; }

}  // namespace facecheck::index
#endif  // __aarch64__
