// Helpers shared by the similarity index's binding files (index_binding.cpp, index_snapshot_binding.cpp,
// index_hooks_binding.cpp): argument conversion, index errors as JS errors, and the worker that runs a
// call off the event loop and settles a Promise.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "addon/bindings.h"
#include "core/status.h"
#include "core/index/kernels.h"
#include "core/index/similarity_index.h"

namespace facecheck::addon::indexjs {

using index::Collection;
using index::IndexCode;
using index::IndexResult;
using index::Kernel;

inline Napi::Error indexError(Napi::Env env, const IndexResult& r) {
  Napi::Error e = Napi::Error::New(env, r.detail.empty() ? index::indexCodeName(r.code) : r.detail);
  e.Set("code", Napi::String::New(env, index::indexCodeName(r.code)));
  e.Set("status", Napi::String::New(env, statusName(index::toStatus(r.code))));
  return e;
}

[[noreturn]] inline void typeError(Napi::Env env, const std::string& what) { throw Napi::TypeError::New(env, what); }

inline std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsString()) typeError(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

inline double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsNumber()) typeError(info.Env(), std::string(name) + " must be a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

template <typename T, napi_typedarray_type Type>
inline Napi::TypedArrayOf<T> typedArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != Type)
    typeError(info.Env(), std::string(name) + " has the wrong type");
  return info[i].As<Napi::TypedArrayOf<T>>();
}

inline Napi::Float32Array floatArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typedArg<float, napi_float32_array>(info, i, name);
}

inline std::vector<std::string> stringArrayArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsArray()) typeError(info.Env(), std::string(name) + " must be an array of strings");
  Napi::Array a = info[i].As<Napi::Array>();
  const uint32_t n = a.Length();
  std::vector<std::string> out;
  out.reserve(n);
  for (uint32_t j = 0; j < n; ++j) {
    Napi::Value v = a.Get(j);
    if (!v.IsString()) typeError(info.Env(), std::string(name) + " must be an array of strings");
    out.push_back(v.As<Napi::String>().Utf8Value());
  }
  return out;
}

inline const Kernel* kernelNamed(Napi::Env env, Napi::Value v) {
  if (v.IsUndefined() || v.IsNull()) return nullptr;
  if (!v.IsString()) typeError(env, "kernel must be a string");
  std::string name = v.As<Napi::String>().Utf8Value();
  const Kernel* k = index::kernelByName(name.c_str());
  if (!k) throw indexError(env, IndexResult::fail(IndexCode::BadArgument, "kernel " + name + " is not available"));
  return k;
}

// A collection or a thrown ERR_INDEX_NO_COLLECTION.
inline std::shared_ptr<Collection> collectionArg(const Napi::CallbackInfo& info, size_t i) {
  std::string name = stringArg(info, i, "collection");
  auto c = index::registry().find(name);
  if (!c) throw indexError(info.Env(), IndexResult::fail(IndexCode::NoCollection, "no collection " + name));
  return c;
}

// Keys given as one string joined by '\0' (one conversion instead of one per key): `n` keys expected, none
// when n is 0.
inline std::vector<std::string> splitJoinedKeys(const std::string& joined, size_t n) {
  std::vector<std::string> keys;
  if (n == 0) return keys;
  keys.reserve(n);
  size_t start = 0;
  for (;;) {
    size_t end = joined.find('\0', start);
    keys.emplace_back(joined, start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return keys;
}

// Runs `run` off the event loop, then settles the promise with `resolve` (on the JS thread) or the error.
class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, std::function<IndexResult()> run, std::function<Napi::Value(Napi::Env)> resolve)
      : Napi::AsyncWorker(env, "faceCheckIndex"),
        deferred_(Napi::Promise::Deferred::New(env)),
        run_(std::move(run)),
        resolve_(std::move(resolve)) {}

  // Keeps a JS value (an input typed array) alive until the work is done.
  void Keep(Napi::Value v) { kept_.push_back(Napi::Persistent(v)); }
  // Adds properties to the error a failed run rejects with (on the JS thread).
  void OnReject(std::function<void(Napi::Error&)> decorate) { decorate_ = std::move(decorate); }

  static Napi::Promise Start(PromiseWorker* w) {
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override { result_ = run_(); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!result_.ok()) {
      Napi::Error e = indexError(env, result_);
      if (decorate_) decorate_(e);
      deferred_.Reject(e.Value());
      return;
    }
    try {
      deferred_.Resolve(resolve_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<IndexResult()> run_;
  std::function<Napi::Value(Napi::Env)> resolve_;
  std::function<void(Napi::Error&)> decorate_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  IndexResult result_;
};

// The snapshot calls (exportCodes, importCodes, importSealed, sealedImportAvailable) and the test and
// benchmark hooks, added to `exports.index`.
void addSnapshotFunctions(Napi::Env env, Napi::Object index);
void addHookFunctions(Napi::Env env, Napi::Object index);
// loadSealedTemplates (index_sealed_load_binding.cpp).
void addSealedLoadFunctions(Napi::Env env, Napi::Object index);

}  // namespace facecheck::addon::indexjs
