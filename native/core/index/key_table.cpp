#include "core/index/key_table.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace facecheck::index {

namespace {
constexpr size_t kMinBuckets = 16;

inline uint32_t tagOf(uint64_t entry) { return uint32_t(entry >> 32); }
inline uint32_t slotOf(uint64_t entry) { return uint32_t(entry) - 1; }
inline uint64_t entryOf(uint64_t hash, uint32_t slot) { return (hash << 32) | (uint64_t(slot) + 1); }

// Buckets for n keys at most 70% full (a power of two).
size_t bucketsFor(size_t n) {
  size_t b = kMinBuckets;
  while (b * 7 < n * 10) b *= 2;
  return b;
}
}  // namespace

uint64_t KeyTable::hashOf(std::string_view key) { return std::hash<std::string_view>{}(key); }

uint32_t KeyTable::find(std::string_view key) const {
  if (table_.empty()) return kNone;
  const uint64_t h = hashOf(key);
  const uint32_t tag = uint32_t(h);
  for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
    const uint64_t e = table_[i];
    if (e == 0) return kNone;
    if (tagOf(e) == tag && this->key(slotOf(e)) == key) return slotOf(e);
  }
}

bool KeyTable::add(std::string_view key, uint32_t* slot) { return add(key, hashOf(key), slot); }

bool KeyTable::add(std::string_view key, uint64_t h, uint32_t* slot) {
  if ((refs_.size() + 1) * 10 > table_.size() * 7) rehash(bucketsFor(std::max<size_t>(refs_.size() + 1, 2 * refs_.size())));
  const uint32_t tag = uint32_t(h);
  size_t i = tag & mask_;
  for (;; i = (i + 1) & mask_) {
    const uint64_t e = table_[i];
    if (e == 0) break;
    if (tagOf(e) == tag && this->key(slotOf(e)) == key) {
      *slot = slotOf(e);
      return false;
    }
  }
  // Grow the vectors first (may throw), then change anything.
  if (refs_.size() == refs_.capacity()) refs_.reserve(std::max<size_t>(16, 2 * refs_.size()));
  if (arena_.size() + key.size() > arena_.capacity()) arena_.reserve(std::max(2 * arena_.capacity(), arena_.size() + key.size() + 256));
  const uint64_t off = arena_.size();
  arena_.insert(arena_.end(), key.begin(), key.end());
  *slot = uint32_t(refs_.size());
  refs_.push_back(off << 16 | uint64_t(key.size()));
  table_[i] = entryOf(tag, *slot);
  return true;
}

size_t KeyTable::bucketOf(uint32_t slot) const {
  const uint32_t tag = uint32_t(hashOf(key(slot)));
  for (size_t i = tag & mask_;; i = (i + 1) & mask_)
    if (table_[i] != 0 && slotOf(table_[i]) == slot) return i;
}

// Linear-probing removal without tombstones: later entries of the probe run move back into the hole
// unless their home bucket lies cyclically after it.
void KeyTable::eraseBucket(size_t i) {
  for (size_t j = i;;) {
    j = (j + 1) & mask_;
    const uint64_t e = table_[j];
    if (e == 0) break;
    const size_t home = tagOf(e) & mask_;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      table_[i] = e;
      i = j;
    }
  }
  table_[i] = 0;
}

void KeyTable::removeSwapLast(uint32_t slot) {
  const uint32_t last = uint32_t(refs_.size() - 1);
  // Leave no trace of the removed key (the bytes stay in the arena until it is compacted).
  std::memset(arena_.data() + (refs_[slot] >> 16), 0, size_t(refs_[slot] & 0xffff));
  garbage_ += refs_[slot] & 0xffff;
  eraseBucket(bucketOf(slot));
  if (slot != last) {
    const size_t b = bucketOf(last);
    table_[b] = entryOf(tagOf(table_[b]), slot);
    refs_[slot] = refs_[last];
  }
  refs_.pop_back();
  if (refs_.empty()) {
    arena_.clear();
    garbage_ = 0;
  } else if (garbage_ > 4096 && garbage_ * 2 > arena_.size()) {
    compactArena();
  }
}

void KeyTable::truncate(size_t n) {
  if (n >= refs_.size()) return;
  // Keys of slots >= n were added last, so their bytes end the arena (no compaction ran since).
  const size_t arenaEnd = size_t(refs_[n] >> 16);
  for (size_t s = refs_.size(); s-- > n;) eraseBucket(bucketOf(uint32_t(s)));
  refs_.resize(n);
  std::memset(arena_.data() + arenaEnd, 0, arena_.size() - arenaEnd);
  arena_.resize(arenaEnd);
  if (refs_.empty()) garbage_ = 0;
}

void KeyTable::reserveMore(size_t n, size_t bytes) {
  // Exact on an empty table (a clearing load knows its size); geometric growth for appends, so that loading
  // block after block does not copy the arena once per block.
  const size_t keys = refs_.size() + n, chars = arena_.size() + bytes;
  if (keys > refs_.capacity()) refs_.reserve(refs_.empty() ? keys : std::max(keys, refs_.capacity() + refs_.capacity() / 2));
  if (chars > arena_.capacity()) arena_.reserve(arena_.empty() ? chars : std::max(chars, arena_.capacity() + arena_.capacity() / 2));
  if (keys * 10 > table_.size() * 7) rehash(bucketsFor(keys));
}

void KeyTable::rehash(size_t buckets) {
  std::vector<uint64_t, PageAllocator<uint64_t>> fresh(buckets, 0);  // may throw: nothing changed yet
  const size_t mask = buckets - 1;
  for (uint64_t e : table_) {
    if (e == 0) continue;
    size_t i = tagOf(e) & mask;
    while (fresh[i] != 0) i = (i + 1) & mask;
    fresh[i] = e;
  }
  table_.swap(fresh);
  mask_ = mask;
}

// Rewrites the arena in slot order without the bytes of removed keys. Runs when they are more than half
// of it, so its cost is amortised over the removals.
void KeyTable::compactArena() {
  std::vector<char, PageAllocator<char>> fresh;
  try {
    fresh.reserve(arena_.size() - garbage_);
  } catch (...) {
    return;  // keep the garbage rather than fail a removal
  }
  for (auto& r : refs_) {
    const size_t off = size_t(r >> 16), len = size_t(r & 0xffff);
    const uint64_t at = fresh.size();
    fresh.insert(fresh.end(), arena_.begin() + off, arena_.begin() + off + len);
    r = at << 16 | len;
  }
  arena_.swap(fresh);
  garbage_ = 0;
}

}  // namespace facecheck::index
