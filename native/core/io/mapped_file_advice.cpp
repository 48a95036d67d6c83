#include "core/io/mapped_file_advice.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cinttypes>
#include <cstdio>

namespace facecheck {
namespace {

int adviceFlag(MapAdvice a) {
  switch (a) {
    case MapAdvice::Random: return MADV_RANDOM;
    case MapAdvice::Sequential: return MADV_SEQUENTIAL;
    case MapAdvice::Release: return MADV_DONTNEED;
    case MapAdvice::Normal: break;
  }
  return MADV_NORMAL;
}

// Closes the FILE* it holds.
struct ProcMaps {
  FILE* f = std::fopen("/proc/self/maps", "re");
  ~ProcMaps() {
    if (f) std::fclose(f);
  }
};

}  // namespace

int adviseMappedFile(const std::string& path, MapAdvice advice) noexcept {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  ProcMaps maps;
  if (!maps.f) return -1;
  int advised = 0;
  char line[4096];
  while (std::fgets(line, sizeof line, maps.f)) {
    // start-end perms offset major:minor inode [path]
    uintptr_t start = 0, end = 0;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %x:%x %llu", &start, &end, &major, &minor, &inode) != 5) continue;
    if (inode != (unsigned long long)st.st_ino || major != ::major(st.st_dev) || minor != ::minor(st.st_dev)) continue;
    if (::madvise(reinterpret_cast<void*>(start), end - start, adviceFlag(advice)) == 0) advised++;
  }
  return advised;
}

}  // namespace facecheck
