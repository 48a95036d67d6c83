// Splitting a scan or a bulk encode over threads. Internal to core/index (baseline instruction set only,
// see mapped_buffer.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "core/index/kernels.h"
#include "core/index/mapped_buffer.h"

namespace facecheck::index {

constexpr size_t kAutoWorkPerThread = 32768;  // rows x queries that justify one more scan thread
constexpr size_t kMinRowsPerThread = 1024;

inline unsigned hardwareThreads() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

// Threads for a scan of `rows` rows costing `work` (rows x queries): `requested`, or automatic when 0.
inline unsigned resolveThreads(unsigned requested, size_t rows, size_t work) {
  unsigned t = requested == 0 ? unsigned(std::min<size_t>(hardwareThreads(), std::max<size_t>(1, work / kAutoWorkPerThread)))
                              : std::min(requested, 64u);
  t = unsigned(std::min<size_t>(t, std::max<size_t>(1, rows / kMinRowsPerThread)));
  return t ? t : 1;
}

// Runs fn(part, lo, hi) over `parts` contiguous ranges of [0, n) (range bounds multiples of kScanBlock),
// part 0 on the calling thread. Falls back to running a part inline when a thread cannot be started.
template <typename Fn>
void runPartitioned(unsigned parts, size_t n, Fn&& fn) {
  std::vector<size_t> bounds(parts + 1, n);
  bounds[0] = 0;
  for (unsigned p = 1; p < parts; ++p) bounds[p] = std::min(n, roundUp(n * p / parts, kScanBlock));
  std::vector<std::thread> workers;
  std::vector<unsigned> inline_parts;
  for (unsigned p = 1; p < parts; ++p) {
    try {
      workers.emplace_back([&fn, &bounds, p] { fn(p, bounds[p], bounds[p + 1]); });
    } catch (...) {
      inline_parts.push_back(p);
    }
  }
  fn(0u, bounds[0], bounds[1]);
  for (unsigned p : inline_parts) fn(p, bounds[p], bounds[p + 1]);
  for (auto& w : workers) w.join();
}

}  // namespace facecheck::index
