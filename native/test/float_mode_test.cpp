// Checks core/ort/float_mode.h: inside a FlushDenormals scope denormal operands read as zero and denormal
// results become zero; when the scope ends the thread computes with denormals again, also after nesting.
// Prints one line per case; exits 1 on a failure. Built and run by test/engine/float-mode.test.ts.
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/ort/float_mode.h"

using namespace facecheck;

namespace {

int failures = 0;

void check(const char* name, bool ok) {
  std::printf("%s %s\n", ok ? "ok" : "FAIL", name);
  if (!ok) ++failures;
}

// volatile: the compiler must not fold these at build time, where the run-time mode does not apply.
volatile float denormal = FLT_MIN / 4;  // 2^-128
volatile float small = FLT_MIN * 2;     // 2^-125, normal
volatile float one = 1.0f, quarter = 0.125f;

float denormalTimesOne() { return denormal * one; }  // a denormal operand (DAZ reads it as 0)
float smallTimesQuarter() { return small * quarter; }  // normal operands, a denormal result (FTZ gives 0)

// Bit patterns, not float ==: with DAZ set, a comparison reads a denormal operand as zero too.
uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
constexpr uint32_t kDenormalBits = 0x00200000;  // 2^-128

bool computesDenormals() { return bits(denormalTimesOne()) == kDenormalBits && bits(smallTimesQuarter()) == kDenormalBits; }
bool flushesDenormals() { return bits(denormalTimesOne()) == 0 && bits(smallTimesQuarter()) == 0; }

}  // namespace

int main() {
  check("denormals are computed by default", computesDenormals());
  {
    FlushDenormals flush;
    check("denormal operands and results are zero inside the scope", flushesDenormals());
    {
      FlushDenormals nested;
      check("and inside a nested scope", flushesDenormals());
    }
    check("still zero after the nested scope ends", flushesDenormals());
  }
  check("denormals are computed again after the scope", computesDenormals());
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
