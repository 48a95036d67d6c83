// Asking the kernel to read files into the page cache ahead of their use: a service's snapshot files at
// the very start of the process, so the device reads them while the program's modules load and its store
// opens, and the snapshot import then finds them cached. Internal to core/index (baseline instruction set).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace facecheck::index {

struct ReadAheadResult {
  uint64_t requested = 0;  // bytes the kernel was asked for
  unsigned files = 0;      // files opened (one that cannot be opened is skipped: the import reports it)
};

// Asks for each file in order, from its start, in steps (posix_fadvise WILLNEED: each call returns once the
// reads are queued), until maxBytes in all. Nothing is copied to user memory. Never throws.
ReadAheadResult readAhead(const std::vector<std::string>& paths, uint64_t maxBytes) noexcept;

}  // namespace facecheck::index
