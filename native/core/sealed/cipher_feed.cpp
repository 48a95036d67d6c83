#include "core/sealed/cipher_feed.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace facecheck::index {
namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool CipherFeed::next(size_t n, uint8_t* out) {
  while (n > 0) {
    if (at_ == have_ && !refill()) return false;
    const size_t k = std::min(n, have_ - at_);
    if (!opener_.update(buf_ + at_, k, out)) {
      error_ = FeedError::Cipher;
      return false;
    }
    at_ += k;
    out += k;
    n -= k;
  }
  return true;
}

bool CipherFeed::refill() {
  const double t0 = seconds();
  const size_t want = size_t(std::min<uint64_t>(left_, kCipherFeedPiece));
  if (want == 0) {
    error_ = FeedError::Cut;  // asked past the chunk: its sizes do not add up (a checked plan cannot)
    return false;
  }
  size_t got = 0;
  while (got < want) {
    const ssize_t n = pread(fd_, buf_ + got, want - got, off_t(offset_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n == 0 ? FeedError::Cut : FeedError::Read;
      return false;
    }
    got += size_t(n);
  }
  *readSeconds_ += seconds() - t0;
  offset_ += got;
  left_ -= got;
  at_ = 0;
  have_ = got;
  return true;
}

}  // namespace facecheck::index
