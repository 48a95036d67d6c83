// Giving the process's free heap memory back to the kernel while the device is idle. glibc keeps what
// a thread frees inside that thread's arena, resident, and gives back only an arena's top: the start's
// transients (ONNX Runtime building its sessions, the image decoder's threads, the camera's first frames)
// stay in the resident set for the life of the process (docs/board.md gives the figures). It has
// no time-based release of its own (as jemalloc's decay has), so the capture pipeline calls this when it
// goes idle and then at a slow period while it stays idle.
#pragma once

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace facecheck {

// Returns free pages of every heap arena to the kernel (glibc's malloc_trim); false where the C library
// has no such call or nothing was returned. Takes each arena's lock in turn, hence only while idle.
inline bool returnFreeHeapToKernel() {
#if defined(__GLIBC__)
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

}  // namespace facecheck
