// Page cache hints for the storage layer (exported as `storage`):
// - `storage.adviseMappedFile(path, 'normal' | 'random' | 'sequential' | 'release') -> number`: the read-ahead
//   advice of this process's maps of a file, or their pages released from its resident set (core/io/mapped_file_advice.h). Synchronous: a read of /proc/self/maps and a
//   madvise per mapping, microseconds.
// - `storage.readAhead(paths, maxBytes) -> { done: Promise<{ requested, files }>, stop() }`: the kernel asked
//   to read files into the page cache (core/io/file_read_ahead.h), on a libuv thread; stop() ends it at its
//   next step.
// - `storage.libc`: "glibc" when the addon was built against glibc (so this process runs on it), else "".
#include <napi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "addon/bindings.h"
#include "core/io/file_read_ahead.h"
#include "core/io/mapped_file_advice.h"

namespace facecheck::addon {
namespace {

Napi::Value AdviseMappedFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString())
    throw Napi::TypeError::New(env, "adviseMappedFile(path: string, advice: 'normal' | 'random' | 'sequential' | 'release')");
  const std::string advice = info[1].As<Napi::String>().Utf8Value();
  MapAdvice a;
  if (advice == "normal") a = MapAdvice::Normal;
  else if (advice == "random") a = MapAdvice::Random;
  else if (advice == "sequential") a = MapAdvice::Sequential;
  else if (advice == "release") a = MapAdvice::Release;
  else throw Napi::RangeError::New(env, "adviseMappedFile: advice must be 'normal', 'random', 'sequential' or 'release'");
  return Napi::Number::New(env, adviseMappedFile(info[0].As<Napi::String>().Utf8Value(), a));
}

class ReadAheadWorker : public Napi::AsyncWorker {
 public:
  ReadAheadWorker(Napi::Env env, std::vector<std::string> paths, uint64_t maxBytes, std::shared_ptr<std::atomic<bool>> stop)
      : Napi::AsyncWorker(env, "faceCheckReadAhead"),
        deferred_(Napi::Promise::Deferred::New(env)),
        paths_(std::move(paths)),
        maxBytes_(maxBytes),
        stop_(std::move(stop)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { result_ = readAhead(paths_, maxBytes_, *stop_); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("requested", double(result_.requested));
    o.Set("files", double(result_.files));
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<std::string> paths_;
  uint64_t maxBytes_;
  std::shared_ptr<std::atomic<bool>> stop_;
  ReadAheadResult result_;
};

Napi::Value ReadAhead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsArray() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "readAhead(paths: string[], maxBytes: number)");
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    if (!v.IsString()) throw Napi::TypeError::New(env, "readAhead: a path is not a string");
    paths.push_back(v.As<Napi::String>().Utf8Value());
  }
  const double max = info[1].As<Napi::Number>().DoubleValue();
  if (!(max >= 0)) throw Napi::RangeError::New(env, "readAhead: maxBytes must be 0 or more");
  const uint64_t maxBytes = max >= 9007199254740991.0 ? UINT64_MAX : uint64_t(max);
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto* w = new ReadAheadWorker(env, std::move(paths), maxBytes, stop);
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("done", w->Promise());
  handle.Set("stop", Napi::Function::New(env, [stop](const Napi::CallbackInfo& i) -> Napi::Value {
    stop->store(true, std::memory_order_relaxed);
    return i.Env().Undefined();
  }, "stop"));
  w->Queue();
  return handle;
}

// The C library this addon was built against, and so the one the process runs on: the JavaScript side names
// it to the packages that would otherwise probe for it (src/storage/lmdb/load.ts). Only glibc declares
// itself to the compiler; anything else is left to their own probe.
const char* BuiltLibc() {
#if defined(__GLIBC__)
  return "glibc";
#else
  return "";
#endif
}

}  // namespace

void InitPageCacheBinding(Napi::Env env, Napi::Object exports) {
  Napi::Object storage = Napi::Object::New(env);
  storage.Set("libc", Napi::String::New(env, BuiltLibc()));
  storage.Set("adviseMappedFile", Napi::Function::New(env, AdviseMappedFile, "adviseMappedFile"));
  storage.Set("readAhead", Napi::Function::New(env, ReadAhead, "readAhead"));
  exports.Set("storage", storage);
}

}  // namespace facecheck::addon
