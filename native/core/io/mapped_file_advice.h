// Read-ahead advice for the memory maps of a file in this process (madvise), found by the file's device
// and inode in /proc/self/maps. The store's LMDB environment is opened with MDB_NORDAHEAD (LMDB advises
// its map MADV_RANDOM): its usual reads are a few B-tree pages and one value at a time, scattered over
// the file, and a page fault under the default advice reads the kernel's whole read-around window (8 MiB
// on some virtual disks, so a cold fault costs far more than the page it needs). A scan of many large values (the
// galleries' rebuild from the template segments) is the opposite case: for it the map is advised
// normal, then random again. The map belongs to lmdb-js, which exposes no address, hence the lookup.
#pragma once

#include <string>

namespace facecheck {

// Release: the pages leave this process's resident set (MADV_DONTNEED); the page cache keeps them, and the
// next read of one maps it again without a disk read. After a scan of a whole file that searches then read
// a few pages of at a time (a PostgreSQL node's gallery cache at start).
enum class MapAdvice { Normal, Random, Sequential, Release };

// Advises every mapping of the file at `path` in this process. Returns how many were advised; -1 when the
// file or /proc/self/maps cannot be read (not Linux, or no /proc): the advice is only a hint, so callers
// go on either way. Never throws.
int adviseMappedFile(const std::string& path, MapAdvice advice) noexcept;

}  // namespace facecheck
