// An allocator for the index's large bookkeeping arrays (the key table's hash table, references and key
// bytes): from 512 KiB on, a 2 MiB aligned anonymous mapping advised for transparent huge pages, rounded up
// to whole huge pages; smaller ones from the heap. Filling a 16 MB hash table on 4 KiB pages costs ~4,000
// page faults, and a fault is expensive on a virtual machine: huge pages take one per 2 MiB.
// The rounding wastes at most 2 MiB per array. Internal to core/index (baseline instruction set only, see
// mapped_buffer.h).
#pragma once

#include <cstddef>
#include <memory>

namespace facecheck::index {

// Bytes from which an array is mapped on huge pages.
constexpr size_t kPageMappedBytes = size_t(512) << 10;

// A mapping of at least `bytes` (whole huge pages, 2 MiB aligned, zero filled); throws std::bad_alloc.
void* mapPages(size_t bytes);
// Frees what mapPages(bytes) returned.
void unmapPages(void* p, size_t bytes) noexcept;

template <typename T>
struct PageAllocator {
  using value_type = T;
  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n * sizeof(T) >= kPageMappedBytes) return static_cast<T*>(mapPages(n * sizeof(T)));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kPageMappedBytes) unmapPages(p, n * sizeof(T));
    else std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const PageAllocator<U>&) const noexcept { return false; }
};

}  // namespace facecheck::index
