// The keys of a collection: slot -> key and key -> slot, kept compact. The key bytes live in one arena,
// each slot has an 8-byte reference (offset, length) into it, and an open-addressing hash table (linear
// probing, at most 70% full) holds slot numbers tagged with the low bits of the key's hash. At 1M keys of
// 16 bytes that is ~41 bytes per key instead of ~88 for a std::unordered_map of std::string, it is built
// with three allocations instead of a million, and freeing it is immediate.
// Slots are dense like the rows: removing a key moves the last slot's key into its place.
// Internal to core/index (baseline instruction set only, see mapped_buffer.h). Not thread-safe: the
// collection lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/index/page_allocator.h"

namespace facecheck::index {

class KeyTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Longest key in bytes (the reference stores the length in 16 bits).
  static constexpr size_t kMaxKeyBytes = 65535;

  size_t size() const { return refs_.size(); }
  // The slot of key, or kNone.
  uint32_t find(std::string_view key) const;
  // Adds key at slot size() and returns true, or returns false with *slot = its slot when it is present.
  // The key must not be longer than kMaxKeyBytes. Throws std::bad_alloc (nothing changed) when memory runs out.
  bool add(std::string_view key, uint32_t* slot);
  // add() with the key's hashOf() computed beforehand (see prefetch).
  bool add(std::string_view key, uint64_t hash, uint32_t* slot);
  // The hash add() and find() use.
  static uint64_t hashOf(std::string_view key);
  // Asks for the cache line of the key's first bucket: adding many keys at once, prefetching a few keys
  // ahead hides most of the memory latency of the table (16 MB at 1M keys).
  void prefetch(uint64_t hash) const {
    if (!table_.empty()) __builtin_prefetch(&table_[uint32_t(hash) & mask_], 1);
  }
  std::string_view key(uint32_t slot) const {
    const uint64_t r = refs_[slot];
    return std::string_view(arena_.data() + (r >> 16), size_t(r & 0xffff));
  }
  // Removes the key of `slot`; the key of the last slot moves to `slot`, as the rows do.
  void removeSwapLast(uint32_t slot);
  // Removes the keys of slots >= n (the most recently added ones).
  void truncate(size_t n);
  // Room for n more keys of `bytes` bytes in all, so that adding them does not rehash or reallocate.
  void reserveMore(size_t n, size_t bytes);
  // Bytes held (arena, references and hash table).
  size_t bytes() const { return arena_.capacity() + refs_.capacity() * sizeof(uint64_t) + table_.size() * sizeof(uint64_t); }

 private:
  // The table index holding `slot`, whose key is key(slot).
  size_t bucketOf(uint32_t slot) const;
  void eraseBucket(size_t i);
  void rehash(size_t buckets);
  void compactArena();

  // On huge pages once large (page_allocator.h): a million keys fill ~38 MB of them.
  std::vector<char, PageAllocator<char>> arena_;
  std::vector<uint64_t, PageAllocator<uint64_t>> refs_;   // slot -> offset << 16 | length
  std::vector<uint64_t, PageAllocator<uint64_t>> table_;  // 0 = empty, else hash low 32 bits << 32 | (slot + 1)
  size_t mask_ = 0;
  size_t garbage_ = 0;  // arena bytes of removed keys
};

}  // namespace facecheck::index
