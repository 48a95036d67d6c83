// Run-time choice of the index kernel: CPU feature detection (GCC/Clang __builtin_cpu_supports, which also
// checks that the OS saves the AVX/AVX-512 register state), and the FACE_CHECK_SIMD override for tests and
// benchmarks. Decided once, at first use.
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/index/kernels.h"

namespace facecheck::index {
namespace {

struct Choice {
  const Kernel* list[8] = {};
  size_t count = 0;
  const Kernel* active = nullptr;
  std::string note;
};

Choice detect() {
  Choice c;
  c.list[c.count++] = scalarKernel();
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  if (avx2) c.list[c.count++] = avx2Kernel();
  if (avx512) c.list[c.count++] = avx512Kernel();
  if (vnni) c.list[c.count++] = avx512VnniKernel();
#endif
#if defined(__aarch64__)
  c.list[c.count++] = neonKernel();  // Advanced SIMD is part of the aarch64 baseline
#endif
  c.active = c.list[c.count - 1];
  const char* force = std::getenv("FACE_CHECK_SIMD");
  if (force && *force) {
    const Kernel* k = nullptr;
    for (size_t i = 0; i < c.count; ++i)
      if (std::strcmp(c.list[i]->name, force) == 0) k = c.list[i];
    if (k) {
      c.active = k;
    } else {
      c.note = std::string("FACE_CHECK_SIMD=") + force + " is not available on this CPU/build; using " +
               c.active->name;
    }
  }
  return c;
}

const Choice& choice() {
  static const Choice c = detect();
  return c;
}

}  // namespace

size_t availableKernels(const Kernel** out, size_t cap) {
  const Choice& c = choice();
  size_t n = c.count < cap ? c.count : cap;
  for (size_t i = 0; i < n; ++i) out[i] = c.list[i];
  return c.count;
}

const Kernel* activeKernel() { return choice().active; }

const Kernel* kernelByName(const char* name) {
  const Choice& c = choice();
  for (size_t i = 0; i < c.count; ++i)
    if (std::strcmp(c.list[i]->name, name) == 0) return c.list[i];
  return nullptr;
}

const char* kernelOverrideNote() { return choice().note.c_str(); }

}  // namespace facecheck::index
