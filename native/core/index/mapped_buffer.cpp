#include "core/index/mapped_buffer.h"

#include <sys/mman.h>

#include <new>

#include "core/index/page_allocator.h"

namespace facecheck::index {

namespace {
constexpr int kMadvPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14); older headers lack the name
}  // namespace

void* mapPages(size_t bytes) {
  MappedBuffer b(roundUp(bytes, kHugePage), true);
  if (!b.data()) throw std::bad_alloc();
  return b.release();
}

void unmapPages(void* p, size_t bytes) noexcept {
  if (p) munmap(p, roundUp(bytes, kHugePage));
}

MappedBuffer::MappedBuffer(size_t bytes, bool hugeAdvice) {
  if (bytes == 0) return;
  const bool huge = hugeAdvice && bytes >= kHugePage;
  const size_t size = huge ? roundUp(bytes, kHugePage) : roundUp(bytes, 4096);
  const size_t span = huge ? size + kHugePage : size;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  uint8_t* base = static_cast<uint8_t*>(p);
  if (huge) {
    uint8_t* aligned = reinterpret_cast<uint8_t*>(roundUp(reinterpret_cast<uintptr_t>(base), kHugePage));
    if (aligned > base) munmap(base, size_t(aligned - base));
    uint8_t* end = aligned + size;
    if (base + span > end) munmap(end, size_t(base + span - end));
    base = aligned;
#ifdef MADV_HUGEPAGE
    madvise(base, size, MADV_HUGEPAGE);
#endif
  }
  // Small pages: fault every page in now, in one call: chunks are filled right after they are made, and a
  // large bulk load otherwise takes a separate page fault per page, each paid in system time. Huge pages: left to the first write (one fault per 2 MiB), so that their zeroing happens
  // in the threads that fill them, in parallel, instead of up front on one thread (where a large import
  // spent much of its time). Ignored by kernels before 5.14.
  if (!huge) madvise(base, size, kMadvPopulateWrite);
  ptr_ = base;
  size_ = size;
}

bool MappedBuffer::populate() const { return !ptr_ || madvise(ptr_, size_, kMadvPopulateWrite) == 0; }

MappedBuffer::~MappedBuffer() {
  if (ptr_) munmap(ptr_, size_);
}

}  // namespace facecheck::index
