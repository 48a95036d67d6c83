// AES-256-GCM decryption with the OpenSSL of the running process: sealed snapshot chunks
// (core/sealed/sealed_import.cpp) and sealed template values (sealed_batch.cpp). Node's official builds link OpenSSL statically and export its symbols, so the
// functions are looked up at run time (dlsym(RTLD_DEFAULT, ...)) with the small set of function types
// below: the addon links against no OpenSSL and needs no OpenSSL headers (the arm64 prebuild is
// cross-compiled without them), and a process without these symbols (a Node built against another
// library, a test program) reports why, and the caller takes its other path (JavaScript's AES-GCM). Before first use the functions must open a known AES-256-GCM message and refuse it with a
// flipped tag bit, so a library whose functions do something else is not trusted either.
// Internal to core (baseline instruction set only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace facecheck::crypto {

constexpr size_t kAesGcmKeyBytes = 32;
constexpr size_t kAesGcmTagBytes = 16;

// Whether AES-256-GCM can be opened here (the functions found and the known-answer check passed; decided
// once per process). Otherwise *why (when given) says what is missing.
bool aesGcmAvailable(std::string* why = nullptr);

// One decryption context (an EVP_CIPHER_CTX), freed with the object. Only when aesGcmAvailable(). Each
// message: begin, update for its ciphertext in order (any split), finish with its tag.
class AesGcmOpener {
 public:
  AesGcmOpener();
  ~AesGcmOpener();
  AesGcmOpener(const AesGcmOpener&) = delete;
  AesGcmOpener& operator=(const AesGcmOpener&) = delete;

  // Whether the context was made.
  bool ok() const { return ctx_ != nullptr; }
  // Starts a message: a kAesGcmKeyBytes key, its nonce, and its additional data.
  bool begin(const uint8_t* key, const uint8_t* nonce, size_t nonceBytes, const uint8_t* aad, size_t aadBytes);
  // Deciphers the next n bytes of the message into out (n bytes; out may be in). Not authentic until finish.
  bool update(const uint8_t* in, size_t n, uint8_t* out);
  // True when the kAesGcmTagBytes tag verifies the whole message; its plain bytes must not be used otherwise.
  bool finish(const uint8_t* tag);

 private:
  void* ctx_ = nullptr;
};

}  // namespace facecheck::crypto
