#!/usr/bin/env bash
# Builds and runs native/test/index_core_test.cpp without Node: every index kernel against the scalar
# reference and the index against a float32 brute force. With aarch64-linux-gnu-g++ and qemu-aarch64
# installed (Debian: g++-aarch64-linux-gnu qemu-user) it also runs the NEON build under emulation.
# INDEX_CORE_TSAN=1 adds a ThreadSanitizer build (the concurrent search/write stress at the end of the test).
# Usage: native/test/index-core-test.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/index-core-test}"
mkdir -p "$out"
src="$root/native/core/index"
flags=(-std=c++17 -O3 -fno-math-errno -Wall -Wextra -Wno-unused-parameter -I"$root/native")
common=("$src/similarity_index.cpp" "$src/cpu_features.cpp" "$src/kernel_scalar.cpp" "$root/native/test/index_core_test.cpp")

if [ "$(uname -m)" = x86_64 ]; then
  g++ "${flags[@]}" -mavx2 -mfma -c "$src/kernel_avx2.cpp" -o "$out/kernel_avx2.o"
  g++ "${flags[@]}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -c "$src/kernel_avx512.cpp" -o "$out/kernel_avx512.o"
  g++ "${flags[@]}" "${common[@]}" "$out/kernel_avx2.o" "$out/kernel_avx512.o" -lpthread -o "$out/index_core_test"
  for k in "" scalar avx2 avx512 avx512vnni; do
    echo "== FACE_CHECK_SIMD=${k:-<auto>}"
    FACE_CHECK_SIMD="$k" "$out/index_core_test"
  done
  if [ "${INDEX_CORE_TSAN:-0}" = 1 ]; then
    tsan=(-fsanitize=thread -O1 -g)
    g++ "${flags[@]}" "${tsan[@]}" -mavx2 -mfma -c "$src/kernel_avx2.cpp" -o "$out/kernel_avx2_tsan.o"
    g++ "${flags[@]}" "${tsan[@]}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -c "$src/kernel_avx512.cpp" -o "$out/kernel_avx512_tsan.o"
    g++ "${flags[@]}" "${tsan[@]}" "${common[@]}" "$out/kernel_avx2_tsan.o" "$out/kernel_avx512_tsan.o" -lpthread -o "$out/index_core_test_tsan"
    echo "== ThreadSanitizer"
    TSAN_OPTIONS=halt_on_error=1 "$out/index_core_test_tsan"
  fi
  if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; then
    aarch64-linux-gnu-g++ "${flags[@]}" -static "${common[@]}" "$src/kernel_neon.cpp" -lpthread -o "$out/index_core_test_arm64"
    echo "== aarch64 (qemu)"
    qemu-aarch64 "$out/index_core_test_arm64"
  fi
else
  g++ "${flags[@]}" "${common[@]}" "$src/kernel_neon.cpp" -lpthread -o "$out/index_core_test"
  "$out/index_core_test"
fi
