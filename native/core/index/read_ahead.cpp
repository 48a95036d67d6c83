#include "core/index/read_ahead.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace facecheck::index {
namespace {

// The same step as the snapshot import's own prefetcher (sealed_import.cpp): in order, a step at a time,
// so the first rows the import reads arrive first.
constexpr uint64_t kStep = 8ull << 20;

}  // namespace

ReadAheadResult readAhead(const std::vector<std::string>& paths, uint64_t maxBytes) noexcept {
  ReadAheadResult r;
  for (const std::string& p : paths) {
    if (r.requested >= maxBytes) break;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      r.files++;
      const uint64_t size = uint64_t(st.st_size);
      for (uint64_t at = 0; at < size && r.requested < maxBytes; at += kStep) {
        const uint64_t step = std::min({kStep, size - at, maxBytes - r.requested});
        if (posix_fadvise(fd, off_t(at), off_t(step), POSIX_FADV_WILLNEED) != 0) break;
        r.requested += step;
      }
    }
    ::close(fd);
  }
  return r;
}

}  // namespace facecheck::index
