#!/usr/bin/env bash
# Builds and runs native/test/index_core_test.cpp without Node: every index kernel against the scalar
# reference and the index against a float32 brute force. `npm test` runs the same build natively
# (test/similarity-index/index-core.test.ts); this script adds what needs extra tools. With aarch64-linux-gnu-g++ and
# qemu-aarch64 installed (Debian: g++-aarch64-linux-gnu qemu-user) it also runs the NEON build under
# emulation. INDEX_CORE_TSAN=1 adds a ThreadSanitizer build (the concurrent search/write stress at the end
# of the test). Flags and sources come from native/build-flags.json and native/sources.json.
# Usage: native/test/index-core-test.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/index-core-test}"
mkdir -p "$out"
# One JSON array of native/<file>.json (a node expression on `j`) as words.
json() { node -e "const j=require('$root/native/$1.json');process.stdout.write(($2).join('\n'))"; }
mapfile -t cxx < <(json build-flags 'j.cxx')
mapfile -t avx2 < <(json build-flags 'j.isa.avx2')
mapfile -t avx512 < <(json build-flags 'j.isa.avx512')
mapfile -t neon < <(json build-flags 'j.isa.neon')
# The index, with the sealed import (core/sealed/) its snapshot imports and sealed loads use.
mapfile -t index_sources < <(json sources "j.core.filter((p)=>p.startsWith('native/core/index/')||p.startsWith('native/core/sealed/')).map((p)=>'$root/'+p)")
mapfile -t avx2_sources < <(json sources "j.simd_avx2.map((p)=>'$root/'+p)")
mapfile -t avx512_sources < <(json sources "j.simd_avx512.map((p)=>'$root/'+p)")
mapfile -t neon_sources < <(json sources "j.simd_neon.map((p)=>'$root/'+p)")
flags=("${cxx[@]}" -I"$root/native")
common=("${index_sources[@]}" "$root/native/test/index_core_test.cpp")

# Kernel objects for x86-64, each with its own instruction set only; $1 = object suffix, rest = extra flags.
x86_kernels() {
  local suffix="$1"; shift
  g++ "${flags[@]}" "$@" "${avx2[@]}" -c "${avx2_sources[@]}" -o "$out/kernel_avx2$suffix.o"
  g++ "${flags[@]}" "$@" "${avx512[@]}" -c "${avx512_sources[@]}" -o "$out/kernel_avx512$suffix.o"
}

if [ "$(uname -m)" = x86_64 ]; then
  x86_kernels ""
  g++ "${flags[@]}" "${common[@]}" "$out/kernel_avx2.o" "$out/kernel_avx512.o" -lpthread -o "$out/index_core_test"
  for k in "" scalar avx2 avx512 avx512vnni; do
    echo "== FACE_CHECK_SIMD=${k:-<auto>}"
    FACE_CHECK_SIMD="$k" "$out/index_core_test"
  done
  if [ "${INDEX_CORE_TSAN:-0}" = 1 ]; then
    tsan=(-fsanitize=thread -O1 -g)
    x86_kernels _tsan "${tsan[@]}"
    g++ "${flags[@]}" "${tsan[@]}" "${common[@]}" "$out/kernel_avx2_tsan.o" "$out/kernel_avx512_tsan.o" -lpthread -o "$out/index_core_test_tsan"
    echo "== ThreadSanitizer"
    TSAN_OPTIONS=halt_on_error=1 "$out/index_core_test_tsan"
  fi
  if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; then
    aarch64-linux-gnu-g++ "${flags[@]}" -static "${common[@]}" "${neon[@]}" "${neon_sources[@]}" -lpthread -o "$out/index_core_test_arm64"
    echo "== aarch64 (qemu)"
    qemu-aarch64 "$out/index_core_test_arm64"
  fi
else
  g++ "${flags[@]}" "${common[@]}" "${neon[@]}" "${neon_sources[@]}" -lpthread -o "$out/index_core_test"
  "$out/index_core_test"
fi
