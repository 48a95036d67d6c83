// SIMD kernels of the similarity index. One file per instruction set (kernel_scalar.cpp, kernel_avx2.cpp,
// kernel_avx512.cpp, kernel_neon.cpp); only the ISA files get ISA compiler flags, and the one to use is chosen
// once at run time (cpu_features.cpp). Pure C++: no Node-API here.
//
// Kernel files must not instantiate inline/template code with external linkage (no STL containers or
// algorithms): with per-file ISA flags the linker could otherwise keep an AVX-512 copy of a shared inline
// function and run it on a CPU without AVX-512. Everything in a kernel file lives in an anonymous namespace
// except its one accessor function.
#pragma once

#include <cstddef>
#include <cstdint>

namespace facecheck::index {

// Row stride of the int8 codes is a multiple of this many bytes; the bytes past `dim` are zero.
constexpr size_t kCodeAlign = 64;

// Scanned rows per block of the row scan (the block's raw scores are `nq x kScanBlock` int32).
constexpr size_t kScanBlock = 256;

struct Kernel {
  const char* name;

  // Bytes of one prepared query whose codes are `stride` bytes (stride % kCodeAlign == 0).
  size_t (*prepared_bytes)(size_t stride);
  // Converts one int8 query (stride bytes, zero padded) to the kernel's query format, `out` is 64-byte aligned.
  void (*prepare)(const int8_t* q, size_t stride, void* out);
  // out[j * out_stride + r] = sum_d q_j[d] * x_r[d], exactly, for j < nq, r < nr.
  // `prepared` holds nq prepared queries of prepared_bytes(stride) bytes each; `rows` holds nr rows of int8
  // codes `stride` bytes apart (64-byte aligned, zero padded); `row_sums[r]` is the sum of row r's codes.
  // Codes are in [-127, 127].
  void (*scan)(const void* prepared, size_t nq, const int8_t* rows, size_t nr, size_t stride,
               const int32_t* row_sums, int32_t* out, size_t out_stride);
  // Picks the rows of one scanned block whose approximate score raw[r] * row_scale[r] * qscale is >= thr:
  // writes their indices to idx and their scores to score (in row order) and returns how many.
  // The arithmetic is the same in every kernel (float(raw) * row_scale, then * qscale), so every kernel
  // selects the same rows with the same approximate scores.
  size_t (*select)(const int32_t* raw, const float* row_scale, size_t nr, float qscale, float thr,
                   uint32_t* idx, float* score);
  // Exact int8 dot product of any length n (codes in [-127, 127]).
  int32_t (*dot_i8)(const int8_t* a, const int8_t* b, size_t n);
  // float32 dot product of any length n (summation order is the kernel's own).
  float (*dot_f32)(const float* a, const float* b, size_t n);
  // Reads `bytes` bytes once (64-byte aligned, bytes % 64 == 0) and returns a checksum: the memory-read
  // reference of the benchmark.
  uint64_t (*stream)(const void* p, size_t bytes);
};

// Per-ISA kernels; each returns nullptr when the file was not built for this target.
const Kernel* scalarKernel();
#if defined(__x86_64__) || defined(_M_X64)
const Kernel* avx2Kernel();
const Kernel* avx512Kernel();      // AVX-512 F/BW/VL, no VNNI instructions
const Kernel* avx512VnniKernel();  // AVX-512 with VNNI (vpdpbusd)
#endif
#if defined(__aarch64__)
const Kernel* neonKernel();
#endif

// Kernels this CPU can run, best last; names: scalar, avx2, avx512, avx512vnni, neon.
// Fills up to `cap` entries and returns the count.
size_t availableKernels(const Kernel** out, size_t cap);
// The kernel chosen at first use: FACE_CHECK_SIMD (scalar|avx2|avx512|avx512vnni|neon) if set and runnable,
// otherwise the best available one.
const Kernel* activeKernel();
// A runnable kernel by name, or nullptr.
const Kernel* kernelByName(const char* name);
// The reason the environment override was ignored ("" when it was honoured or absent).
const char* kernelOverrideNote();

}  // namespace facecheck::index
