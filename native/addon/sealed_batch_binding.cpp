// Sealed storage values opened in batches (core/sealed/sealed_batch.h), for a PostgreSQL node's start-up
// build: sealedTemplatesAvailable() and openSealedTemplates(). The TypeScript caller
// (src/storage/crypto/sealed-batch.ts) validates the arguments and builds the error messages; this file
// only guards the addon against a wrong call, runs the batch off the event loop and reports the first
// failing row.
#include <napi.h>

#include <string.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "addon/bindings.h"
#include "addon/sealed_row_fault.h"
#include "core/sealed/sealed_batch.h"

namespace facecheck::addon {
namespace {

using crypto::SealedBatch;
using crypto::SealedBatchResult;
using crypto::SealedRowFault;

// The batch, its key and the JS arrays it reads and writes, held until the worker is done.
class OpenSealedWorker : public Napi::AsyncWorker {
 public:
  explicit OpenSealedWorker(Napi::Env env)
      : Napi::AsyncWorker(env, "faceCheckSealedBatch"), deferred_(Napi::Promise::Deferred::New(env)) {}
  ~OpenSealedWorker() override { explicit_bzero(key_, sizeof(key_)); }

  Napi::Promise promise() { return deferred_.Promise(); }
  SealedBatch& batch() { return batch_; }
  void setKey(const uint8_t* key) { std::memcpy(key_, key, sizeof(key_)); }
  void setThreads(unsigned threads) { threads_ = threads; }
  // The JS memory the batch points into must outlive Execute, whatever the caller does meanwhile.
  void keep(Napi::Value v) { kept_.push_back(Napi::Persistent(v)); }

 protected:
  void Execute() override { result_ = crypto::openSealedBatch(key_, batch_, threads_); }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (result_.fault == SealedRowFault::None && !result_.detail.empty()) {
      deferred_.Reject(Napi::RangeError::New(env, result_.detail).Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("failedRow", double(result_.failedRow));
    o.Set("reason", sealedRowFaultName(result_.fault));
    o.Set("bytes", double(result_.bytes));
    o.Set("version", double(result_.version));
    o.Set("detail", result_.detail);
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  uint8_t key_[32] = {};
  SealedBatch batch_;
  unsigned threads_ = 0;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  SealedBatchResult result_;
};

template <typename T, napi_typedarray_type Type>
Napi::TypedArrayOf<T> typedArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != Type)
    throw Napi::TypeError::New(info.Env(), std::string("openSealedTemplates: ") + name + " has the wrong type");
  return info[i].As<Napi::TypedArrayOf<T>>();
}

// sealedTemplatesAvailable() -> {available, reason}: whether openSealedTemplates can open values here (the
// process's OpenSSL functions found and checked on a known answer); reason says why not.
Napi::Value SealedTemplatesAvailable(const Napi::CallbackInfo& info) {
  std::string why;
  const bool available = crypto::sealedBatchAvailable(&why);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("available", available);
  o.Set("reason", why);
  return o;
}

// openSealedTemplates(key: Uint8Array(32), sealed: Uint8Array, sealedOffsets: Uint32Array(n + 1),
//   aad: Uint8Array, aadOffsets: Uint32Array(n + 1), out: Float32Array(n * dimension), dimension, threads)
//   -> Promise<{failedRow, reason, bytes, version, detail}>: failedRow -1 when every row opened into out;
// else the lowest failing row and why ('short', 'version', 'tag', 'size'), or 'unavailable'. The arrays are
// used in place until the promise settles; the key is copied and wiped.
Napi::Value OpenSealedTemplates(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto key = typedArg<uint8_t, napi_uint8_array>(info, 0, "key");
  auto sealed = typedArg<uint8_t, napi_uint8_array>(info, 1, "sealed");
  auto sealedOffsets = typedArg<uint32_t, napi_uint32_array>(info, 2, "sealedOffsets");
  auto aad = typedArg<uint8_t, napi_uint8_array>(info, 3, "aad");
  auto aadOffsets = typedArg<uint32_t, napi_uint32_array>(info, 4, "aadOffsets");
  auto out = typedArg<float, napi_float32_array>(info, 5, "out");
  if (info.Length() < 7 || !info[6].IsNumber()) throw Napi::TypeError::New(env, "openSealedTemplates: dimension must be a number");
  const double dimension = info[6].As<Napi::Number>().DoubleValue();
  const double threads = info.Length() > 7 && info[7].IsNumber() ? info[7].As<Napi::Number>().DoubleValue() : 0;
  if (key.ElementLength() != 32) throw Napi::RangeError::New(env, "openSealedTemplates: key is not 32 bytes");
  if (!(dimension >= 1 && dimension <= (1 << 20) && dimension == std::floor(dimension)))
    throw Napi::RangeError::New(env, "openSealedTemplates: dimension is out of range");
  if (sealedOffsets.ElementLength() < 1 || aadOffsets.ElementLength() != sealedOffsets.ElementLength())
    throw Napi::RangeError::New(env, "openSealedTemplates: the offsets differ in count");
  const size_t rows = sealedOffsets.ElementLength() - 1;
  if (out.ElementLength() / size_t(dimension) < rows)
    throw Napi::RangeError::New(env, "openSealedTemplates: out holds fewer than rows x dimension values");

  auto* w = new OpenSealedWorker(env);
  w->setKey(key.Data());
  SealedBatch& b = w->batch();
  b.sealed = sealed.Data();
  b.sealedBytes = sealed.ByteLength();
  b.sealedOffsets = sealedOffsets.Data();
  b.aad = aad.Data();
  b.aadBytes = aad.ByteLength();
  b.aadOffsets = aadOffsets.Data();
  b.rows = rows;
  b.dimension = size_t(dimension);
  b.out = out.Data();
  b.outValues = out.ElementLength();
  w->setThreads(threads >= 0 && threads <= 64 ? unsigned(threads) : 0);
  for (Napi::Value v : {Napi::Value(sealed), Napi::Value(sealedOffsets), Napi::Value(aad), Napi::Value(aadOffsets), Napi::Value(out)})
    w->keep(v);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

}  // namespace

void InitSealedBatchBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("sealedTemplatesAvailable", Napi::Function::New(env, SealedTemplatesAvailable, "sealedTemplatesAvailable"));
  exports.Set("openSealedTemplates", Napi::Function::New(env, OpenSealedTemplates, "openSealedTemplates"));
}

}  // namespace facecheck::addon
