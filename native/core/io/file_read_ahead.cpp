#include "core/io/file_read_ahead.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace facecheck {
namespace {

constexpr uint64_t kStep = 4ull << 20;
// Steps asked for and not yet cached, at most. Asking for a whole file at once queues all of it on the
// device, and the store's page faults then wait behind every request; two steps keep the device busy.
constexpr unsigned kInFlight = 2;
// How long a step may take to arrive before the next is asked for anyway (a device slower than 40 MB/s,
// or pages the kernel dropped again): reading ahead is a hint, never a wait anyone notices.
constexpr auto kStepPatience = std::chrono::milliseconds(100);

// A file mapped without being read, for mincore: whether a page of it is in the page cache.
class ResidencyProbe {
 public:
  ResidencyProbe(int fd, uint64_t size) : size_(size) {
    void* p = size ? ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p != MAP_FAILED) base_ = static_cast<uint8_t*>(p);
  }
  ~ResidencyProbe() {
    if (base_) ::munmap(base_, size_);
  }
  ResidencyProbe(const ResidencyProbe&) = delete;
  ResidencyProbe& operator=(const ResidencyProbe&) = delete;

  // Waits until the page holding byte `at` is cached, the patience runs out, or *stop.
  void awaitPage(uint64_t at, const std::atomic<bool>& stop) const {
    if (!base_) return;
    static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    uint8_t* p = base_ + (at / page) * page;
    const auto until = std::chrono::steady_clock::now() + kStepPatience;
    unsigned char cached = 0;
    while (!stop.load(std::memory_order_relaxed) && ::mincore(p, 1, &cached) == 0 && !(cached & 1) &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(250));
  }

 private:
  uint8_t* base_ = nullptr;
  uint64_t size_;
};

}  // namespace

ReadAheadResult readAhead(const std::vector<std::string>& paths, uint64_t maxBytes, const std::atomic<bool>& stop) noexcept {
  ReadAheadResult r;
  for (const std::string& p : paths) {
    if (r.requested >= maxBytes || stop.load(std::memory_order_relaxed)) break;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      r.files++;
      const uint64_t size = uint64_t(st.st_size);
      const ResidencyProbe probe(fd, size);
      for (uint64_t at = 0; at < size && r.requested < maxBytes; at += kStep) {
        // The last byte of the step before the last one in flight must be cached before another is asked for.
        if (at >= kInFlight * kStep) probe.awaitPage(at - (kInFlight - 1) * kStep - 1, stop);
        if (stop.load(std::memory_order_relaxed)) break;
        const uint64_t step = std::min({kStep, size - at, maxBytes - r.requested});
        if (posix_fadvise(fd, off_t(at), off_t(step), POSIX_FADV_WILLNEED) != 0) break;
        r.requested += step;
      }
    }
    ::close(fd);
  }
  return r;
}

}  // namespace facecheck
