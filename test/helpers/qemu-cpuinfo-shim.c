// Preloaded (LD_PRELOAD) into the arm64 node that test/arm64-smoke.test.ts runs under qemu-user, never
// shipped. qemu-user before 8.1 shows an arm64 program the host's x86 /proc/cpuinfo; ONNX Runtime's CPU
// detection (cpuinfo) finds no ARM processor in it and crashes while loading. This makes open() of
// /proc/cpuinfo read the file named by FACE_CHECK_FAKE_CPUINFO instead (the test writes one matching the
// emulated CPU); every other path, and every call without that variable, goes to libc unchanged.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef int (*OpenFn)(const char*, int, ...);

static const char* redirected(const char* path) {
  const char* fake = getenv("FACE_CHECK_FAKE_CPUINFO");
  return fake && path && strcmp(path, "/proc/cpuinfo") == 0 ? fake : path;
}

static mode_t modeArgument(int flags, va_list args) {
  return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
}

int open(const char* path, int flags, ...) {
  static OpenFn real;
  if (!real) real = (OpenFn)dlsym(RTLD_NEXT, "open");
  va_list args;
  va_start(args, flags);
  mode_t mode = modeArgument(flags, args);
  va_end(args);
  return real(redirected(path), flags, mode);
}

int open64(const char* path, int flags, ...) {
  static OpenFn real;
  if (!real) real = (OpenFn)dlsym(RTLD_NEXT, "open64");
  va_list args;
  va_start(args, flags);
  mode_t mode = modeArgument(flags, args);
  va_end(args);
  return real(redirected(path), flags, mode);
}
