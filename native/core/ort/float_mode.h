#pragma once
// Denormal (subnormal) floats flushed to zero for the life of a scope, then the thread's previous mode back.
//
// Why: fr_feature carries thousands of weights below 2^-126, and tiny weights times small activations make
// more. Intel cores take a microcode assist for every denormal operand: the embedding network ran about ten
// times slower on Intel until inference ran with FTZ and DAZ set (docs/benchmarks.md). ONNX Runtime's
// own `session.set_denormal_as_zero` reaches its thread-pool threads only, not the thread that calls Run,
// which is where a single-threaded session does all its work. The scope restores the old mode because the
// calling thread belongs to libuv's pool and runs other libraries' code too.

#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace facecheck {

class FlushDenormals {
 public:
#if defined(__x86_64__) || defined(_M_X64)
  // MXCSR bit 15 = flush-to-zero (denormal results), bit 6 = denormals-are-zero (denormal inputs).
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(static_cast<unsigned>(saved_) | 0x8000u | 0x0040u); }
  ~FlushDenormals() { _mm_setcsr(static_cast<unsigned>(saved_)); }
#elif defined(__aarch64__)
  // FPCR bit 24 (FZ) flushes denormal inputs and results alike.
  FlushDenormals() {
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(saved_));
    const uint64_t mode = saved_ | (uint64_t{1} << 24);
    __asm__ __volatile__("msr fpcr, %0" : : "r"(mode));
  }
  ~FlushDenormals() { __asm__ __volatile__("msr fpcr, %0" : : "r"(saved_)); }
#endif
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  // The thread's mode before the scope (the platforms the addon builds for are x86-64 and arm64).
  uint64_t saved_ = 0;
};

}  // namespace facecheck
