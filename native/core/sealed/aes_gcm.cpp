#include "core/sealed/aes_gcm.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace facecheck::crypto {

namespace {

// The OpenSSL functions used, as their C prototypes declare them (identical in OpenSSL 1.1 and 3.x), with
// the opaque EVP_CIPHER_CTX, EVP_CIPHER and ENGINE as void.
using CtxNewFn = void* (*)();
using CtxFreeFn = void (*)(void* ctx);
using CipherFn = const void* (*)();
using DecryptInitExFn = int (*)(void* ctx, const void* cipher, void* engine, const unsigned char* key,
                                const unsigned char* iv);
using CtxCtrlFn = int (*)(void* ctx, int type, int arg, void* ptr);
using DecryptUpdateFn = int (*)(void* ctx, unsigned char* out, int* outl, const unsigned char* in, int inl);
using DecryptFinalExFn = int (*)(void* ctx, unsigned char* out, int* outl);

// evp.h: EVP_CTRL_AEAD_SET_IVLEN and EVP_CTRL_AEAD_SET_TAG (= the EVP_CTRL_GCM_ names).
constexpr int kCtrlSetIvLength = 0x9;
constexpr int kCtrlSetTag = 0x11;

struct Evp {
  CtxNewFn ctxNew = nullptr;
  CtxFreeFn ctxFree = nullptr;
  CipherFn aes256gcm = nullptr;
  DecryptInitExFn decryptInit = nullptr;
  CtxCtrlFn ctrl = nullptr;
  DecryptUpdateFn decryptUpdate = nullptr;
  DecryptFinalExFn decryptFinal = nullptr;
  bool usable = false;
  std::string why;
};

template <typename Fn>
bool lookUp(const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
  if (!*out) missing->append(missing->empty() ? name : std::string(", ") + name);
  return *out != nullptr;
}

// The GCM specification's test case 16 (AES-256, 96-bit IV, 20 bytes of additional data, 60 bytes).
constexpr uint8_t kKatKey[32] = {0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f,
                                 0x94, 0x67, 0x30, 0x83, 0x08, 0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65,
                                 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08};
constexpr uint8_t kKatIv[12] = {0xca, 0xfe, 0xba, 0xbe, 0xfa, 0xce, 0xdb, 0xad, 0xde, 0xca, 0xf8, 0x88};
constexpr uint8_t kKatAad[20] = {0xfe, 0xed, 0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed,
                                 0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xab, 0xad, 0xda, 0xd2};
constexpr uint8_t kKatPlain[60] = {
    0xd9, 0x31, 0x32, 0x25, 0xf8, 0x84, 0x06, 0xe5, 0xa5, 0x59, 0x09, 0xc5, 0xaf, 0xf5, 0x26, 0x9a, 0x86, 0xa7, 0xa9, 0x53,
    0x15, 0x34, 0xf7, 0xda, 0x2e, 0x4c, 0x30, 0x3d, 0x8a, 0x31, 0x8a, 0x72, 0x1c, 0x3c, 0x0c, 0x95, 0x95, 0x68, 0x09, 0x53,
    0x2f, 0xcf, 0x0e, 0x24, 0x49, 0xa6, 0xb5, 0x25, 0xb1, 0x6a, 0xed, 0xf5, 0xaa, 0x0d, 0xe6, 0x57, 0xba, 0x63, 0x7b, 0x39};
constexpr uint8_t kKatCipher[60] = {
    0x52, 0x2d, 0xc1, 0xf0, 0x99, 0x56, 0x7d, 0x07, 0xf4, 0x7f, 0x37, 0xa3, 0x2a, 0x84, 0x42, 0x7d, 0x64, 0x3a, 0x8c, 0xdc,
    0xbf, 0xe5, 0xc0, 0xc9, 0x75, 0x98, 0xa2, 0xbd, 0x25, 0x55, 0xd1, 0xaa, 0x8c, 0xb0, 0x8e, 0x48, 0x59, 0x0d, 0xbb, 0x3d,
    0xa7, 0xb0, 0x8b, 0x10, 0x56, 0x82, 0x88, 0x38, 0xc5, 0xf6, 0x1e, 0x63, 0x93, 0xba, 0x7a, 0x0a, 0xbc, 0xc9, 0xf6, 0x62};
constexpr uint8_t kKatTag[16] = {0x76, 0xfc, 0x6e, 0xce, 0x0f, 0x4e, 0x17, 0x68,
                                 0xcd, 0xdf, 0x88, 0x53, 0xbb, 0x2d, 0x55, 0x1b};

// Opens the test message in two uneven pieces; with `flipTag`, expects the tag to be refused.
bool knownAnswer(bool flipTag) {
  AesGcmOpener o;
  uint8_t plain[sizeof(kKatPlain)];
  uint8_t tag[sizeof(kKatTag)];
  std::memcpy(tag, kKatTag, sizeof(tag));
  if (flipTag) tag[7] ^= 0x20;
  if (!o.ok() || !o.begin(kKatKey, kKatIv, sizeof(kKatIv), kKatAad, sizeof(kKatAad))) return false;
  if (!o.update(kKatCipher, 7, plain) || !o.update(kKatCipher + 7, sizeof(kKatCipher) - 7, plain + 7)) return false;
  const bool verified = o.finish(tag);
  if (flipTag) return !verified;
  return verified && std::memcmp(plain, kKatPlain, sizeof(plain)) == 0;
}

Evp lookUpAll() {
  Evp e;
  std::string missing;
  bool all = lookUp("EVP_CIPHER_CTX_new", &e.ctxNew, &missing);
  all &= lookUp("EVP_CIPHER_CTX_free", &e.ctxFree, &missing);
  all &= lookUp("EVP_aes_256_gcm", &e.aes256gcm, &missing);
  all &= lookUp("EVP_DecryptInit_ex", &e.decryptInit, &missing);
  all &= lookUp("EVP_CIPHER_CTX_ctrl", &e.ctrl, &missing);
  all &= lookUp("EVP_DecryptUpdate", &e.decryptUpdate, &missing);
  all &= lookUp("EVP_DecryptFinal_ex", &e.decryptFinal, &missing);
  if (!all) e.why = "the process has no OpenSSL symbols " + missing;
  e.usable = all;
  return e;
}

Evp& evpFunctions();

// Looked up once; the known-answer check runs on the functions before anyone else may use them.
struct Checked {
  bool available = false;
  std::string why;
  Checked() {
    Evp& e = evpFunctions();
    if (!e.usable) {
      why = e.why;
      return;
    }
    if (!knownAnswer(false) || !knownAnswer(true)) {
      e.usable = false;
      why = "the process's OpenSSL failed the AES-256-GCM known-answer check";
      return;
    }
    available = true;
  }
};

Evp& evpFunctions() {
  static Evp e = lookUpAll();
  return e;
}

}  // namespace

bool aesGcmAvailable(std::string* why) {
  static const Checked checked;
  if (!checked.available && why) *why = checked.why;
  return checked.available;
}

AesGcmOpener::AesGcmOpener() {
  const Evp& e = evpFunctions();
  if (e.usable) ctx_ = e.ctxNew();
}

AesGcmOpener::~AesGcmOpener() {
  if (ctx_) evpFunctions().ctxFree(ctx_);
}

bool AesGcmOpener::begin(const uint8_t* key, const uint8_t* nonce, size_t nonceBytes, const uint8_t* aad,
                         size_t aadBytes) {
  const Evp& e = evpFunctions();
  if (!ctx_ || nonceBytes == 0 || nonceBytes > 64 || aadBytes > size_t(INT_MAX)) return false;
  // The cipher first, then the nonce length, then key and nonce (the order OpenSSL's GCM example uses).
  if (e.decryptInit(ctx_, e.aes256gcm(), nullptr, nullptr, nullptr) != 1) return false;
  if (e.ctrl(ctx_, kCtrlSetIvLength, int(nonceBytes), nullptr) != 1) return false;
  if (e.decryptInit(ctx_, nullptr, nullptr, key, nonce) != 1) return false;
  int outl = 0;
  return aadBytes == 0 || e.decryptUpdate(ctx_, nullptr, &outl, aad, int(aadBytes)) == 1;
}

bool AesGcmOpener::update(const uint8_t* in, size_t n, uint8_t* out) {
  const Evp& e = evpFunctions();
  if (!ctx_) return false;
  // GCM is a stream mode: OpenSSL writes every byte at once, so exactly n come out.
  for (size_t done = 0; done < n;) {
    const int piece = int(std::min<size_t>(n - done, size_t(1) << 30));
    int outl = 0;
    if (e.decryptUpdate(ctx_, out + done, &outl, in + done, piece) != 1 || outl != piece) return false;
    done += size_t(piece);
  }
  return true;
}

bool AesGcmOpener::finish(const uint8_t* tag) {
  const Evp& e = evpFunctions();
  if (!ctx_) return false;
  uint8_t copy[kAesGcmTagBytes];
  std::memcpy(copy, tag, sizeof(copy));
  if (e.ctrl(ctx_, kCtrlSetTag, int(sizeof(copy)), copy) != 1) return false;
  uint8_t none[16];
  int outl = 0;
  return e.decryptFinal(ctx_, none, &outl) == 1 && outl == 0;
}

}  // namespace facecheck::crypto
