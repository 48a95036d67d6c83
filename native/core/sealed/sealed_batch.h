// Opening a batch of sealed values (storage's AES-256-GCM format, src/storage/crypto/aead.ts:
//   u8 version (1) | 12-byte nonce | ciphertext | 16-byte tag
// each with its own additional data) into one contiguous float32 array, row i at i * dimension, on several
// threads. Used for the templates a PostgreSQL node reads at start-up: one JavaScript decipher per template
// was a large share of that build. The checks and their order are the JavaScript opener's (too short,
// version, tag, then the plain size), so the caller can name the first failing row with the same message.
// AES-256-GCM is the process's OpenSSL as found by core/sealed/aes_gcm.h. Pure C++: no exception leaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace facecheck::crypto {

constexpr uint8_t kSealVersion = 1;
constexpr size_t kSealNonceBytes = 12;
constexpr size_t kSealOverheadBytes = 1 + kSealNonceBytes + 16;  // version, nonce, tag

// Why a row did not open; the order is the order of the checks.
enum class SealedRowFault {
  None,
  TooShort,     // fewer bytes than version, nonce and tag
  Version,      // a first byte other than kSealVersion
  Tag,          // the tag does not verify: wrong key, damaged bytes, or another row's value or additional data
  Size,         // opened, but its plain bytes are not dimension float32 values
  Unavailable,  // no usable AES-256-GCM in this process, or no memory for a context: no row was judged
};

// Rows are given as offsets into one byte buffer each: row i is sealed[sealedOffsets[i] .. sealedOffsets[i+1])
// and its additional data aad[aadOffsets[i] .. aadOffsets[i+1]). Offsets are rows + 1 entries, not decreasing,
// and end within their buffer (checked by openSealedBatch, which refuses the batch otherwise).
struct SealedBatch {
  const uint8_t* sealed = nullptr;
  size_t sealedBytes = 0;
  const uint32_t* sealedOffsets = nullptr;
  const uint8_t* aad = nullptr;
  size_t aadBytes = 0;
  const uint32_t* aadOffsets = nullptr;
  size_t rows = 0;
  size_t dimension = 0;
  float* out = nullptr;  // rows * dimension values; a row's values are only meaningful when the batch opened
  size_t outValues = 0;
};

struct SealedBatchResult {
  // The lowest row that failed, or -1 when every row opened.
  int64_t failedRow = -1;
  SealedRowFault fault = SealedRowFault::None;
  // TooShort: the sealed value's length; Size: its plain length.
  size_t bytes = 0;
  // Version: the version byte found.
  uint8_t version = 0;
  // Why, for Unavailable or a batch whose offsets are out of bounds (then failedRow is -1 and fault None).
  std::string detail;
  bool ok() const { return failedRow < 0 && fault == SealedRowFault::None && detail.empty(); }
};

// Whether the batch's offsets describe `rows` rows inside their buffers (what openSealedBatch checks first;
// the output is not looked at).
bool sealedBatchOffsetsValid(const SealedBatch& batch);

// Why one row did not open (fault None: it opened).
struct SealedRowFailure {
  SealedRowFault fault = SealedRowFault::None;
  size_t bytes = 0;     // TooShort: the sealed value's length; Size: its plain length
  uint8_t version = 0;  // Version: the version byte found
};

class AesGcmOpener;

// Opens row i of the batch into `out` (batch.dimension floats) with the JavaScript opener's checks in its
// order, using `opener` (one per thread) and `scratch` for a plain value of another size. A row that does
// not open leaves none of its bytes in `out`; Unavailable: no memory for the scratch. batch.out is not used.
// Never throws.
SealedRowFailure openSealedRow(AesGcmOpener& opener, const uint8_t* key, const SealedBatch& batch, size_t i,
                               float* out, std::vector<uint8_t>& scratch) noexcept;

// Whether openSealedBatch can open anything here (see core/sealed/aes_gcm.h); *why says why not.
bool sealedBatchAvailable(std::string* why = nullptr);

// Opens every row of the batch with the 32-byte key (read in place: the caller keeps it for the call) on
// up to `threads` threads (0: the hardware's count, capped), each taking contiguous runs of rows. Rows past
// a failure found by any thread are left unopened, but every row before the reported one was opened and
// verified. Never throws.
SealedBatchResult openSealedBatch(const uint8_t* key, const SealedBatch& batch, unsigned threads = 0) noexcept;

}  // namespace facecheck::crypto
