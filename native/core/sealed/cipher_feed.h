// A sealed snapshot chunk's ciphertext, read from its file (pread) a piece at a time as it is deciphered into
// wherever its bytes go (sealed_import.cpp): the piece is still in the CPU's cache when it is deciphered, and
// nothing of the file is copied twice. Internal to core/index and core/sealed
// (baseline instruction set only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/sealed/aes_gcm.h"

namespace facecheck::index {

// Ciphertext read at a time; the caller's buffer holds this many bytes.
constexpr size_t kCipherFeedPiece = 256 << 10;

enum class FeedError { None, Read, Cut, Cipher };

class CipherFeed {
 public:
  // The chunk's `bytes` of ciphertext at `offset` in `fd`, deciphered by `opener` (begun by the caller);
  // `buffer` holds kCipherFeedPiece bytes; the time spent reading is added to *readSeconds.
  CipherFeed(int fd, uint64_t offset, uint64_t bytes, uint8_t* buffer, crypto::AesGcmOpener& opener, double* readSeconds)
      : fd_(fd), offset_(offset), left_(bytes), buf_(buffer), opener_(opener), readSeconds_(readSeconds) {}

  // Deciphers the next n bytes into out; false (and error()) when the file or the cipher fails.
  bool next(size_t n, uint8_t* out);
  FeedError error() const { return error_; }

 private:
  bool refill();

  const int fd_;
  uint64_t offset_, left_;
  uint8_t* const buf_;
  crypto::AesGcmOpener& opener_;
  double* const readSeconds_;
  size_t at_ = 0, have_ = 0;
  FeedError error_ = FeedError::None;
};

}  // namespace facecheck::index
