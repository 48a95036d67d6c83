// Asking the kernel to read files into the page cache ahead of their use, without copying anything: the
// galleries' snapshot files while the program's modules load, before the store opens (the snapshot import
// that follows then finds most of them cached). Paced: a few MiB asked for at a time, so a small read of
// another file (a page fault of the store) waits behind little, and stoppable, so the store's own reads
// once it opens do not queue behind it at all.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace facecheck {

struct ReadAheadResult {
  uint64_t requested = 0;  // bytes the kernel was asked for
  unsigned files = 0;      // files opened (one that cannot be opened is skipped: its reader reports it)
};

// Asks for each file in order from its start (posix_fadvise WILLNEED in 4 MiB steps, at most two steps not
// yet cached: mincore tells), until maxBytes in all or until *stop. Never throws.
ReadAheadResult readAhead(const std::vector<std::string>& paths, uint64_t maxBytes, const std::atomic<bool>& stop) noexcept;

}  // namespace facecheck
