// Memory of the index: page-mapped buffers for the rows and aligned heap scratch arrays.
// Internal to core/index, compiled in the baseline instruction set only: kernel_* files must not include it
// (an inline function built there with AVX flags could be the copy the linker keeps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace facecheck::index {

constexpr size_t kHugePage = size_t(2) << 20;

inline size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Anonymous mapping, zero filled, returned to the OS on destruction. With `hugeAdvice`, 2 MiB aligned and
// advised for transparent huge pages: the int8 codes, which are streamed by every search (huge pages
// scan faster than 4 KiB pages). The float32 templates are read for a few
// candidates per query only and stay on normal pages (no huge-page compaction for 80% of the memory).
// Normal pages are faulted in at once; huge pages at their first write. data() is null when the mapping
// failed.
class MappedBuffer {
 public:
  MappedBuffer() = default;
  MappedBuffer(size_t bytes, bool hugeAdvice);
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) { o.ptr_ = nullptr, o.size_ = 0; }
  MappedBuffer& operator=(MappedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  uint8_t* data() const { return ptr_; }
  size_t size() const { return size_; }
  // Faults every page in (zero filled) without writing to it, so another thread may be writing it meanwhile
  // (MADV_POPULATE_WRITE); false when the kernel cannot (before Linux 5.14).
  bool populate() const;
  // Hands the mapping over to the caller (who unmaps data(), size() bytes), leaving this empty.
  uint8_t* release() noexcept {
    uint8_t* p = ptr_;
    ptr_ = nullptr;
    size_ = 0;
    return p;
  }

 private:
  uint8_t* ptr_ = nullptr;
  size_t size_ = 0;
};

// 64-byte aligned scratch array (heap; freed with the object).
template <typename T>
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(size_t n) { resize(n); }
  void resize(size_t n) {
    raw_.assign(n * sizeof(T) + 64, 0);
    ptr_ = reinterpret_cast<T*>(roundUp(reinterpret_cast<uintptr_t>(raw_.data()), 64));
  }
  T* data() const { return ptr_; }
  T& operator[](size_t i) const { return ptr_[i]; }

 private:
  std::vector<uint8_t> raw_;
  T* ptr_ = nullptr;
};

}  // namespace facecheck::index
