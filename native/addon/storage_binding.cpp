// Storage helpers: `storage.adviseMappedFile(path, 'normal' | 'random' | 'sequential') -> number`, the
// read-ahead advice of this process's maps of a file (core/mapped_file_advice.h). Synchronous: a read of
// /proc/self/maps and a madvise per mapping, microseconds.
#include <napi.h>

#include <string>

#include "addon/bindings.h"
#include "core/mapped_file_advice.h"

namespace facecheck::addon {
namespace {

Napi::Value AdviseMappedFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString())
    throw Napi::TypeError::New(env, "adviseMappedFile(path: string, advice: 'normal' | 'random' | 'sequential')");
  const std::string advice = info[1].As<Napi::String>().Utf8Value();
  MapAdvice a;
  if (advice == "normal") a = MapAdvice::Normal;
  else if (advice == "random") a = MapAdvice::Random;
  else if (advice == "sequential") a = MapAdvice::Sequential;
  else throw Napi::RangeError::New(env, "adviseMappedFile: advice must be 'normal', 'random' or 'sequential'");
  return Napi::Number::New(env, adviseMappedFile(info[0].As<Napi::String>().Utf8Value(), a));
}

}  // namespace

void InitStorageBinding(Napi::Env env, Napi::Object exports) {
  Napi::Object storage = Napi::Object::New(env);
  storage.Set("adviseMappedFile", Napi::Function::New(env, AdviseMappedFile, "adviseMappedFile"));
  exports.Set("storage", storage);
}

}  // namespace facecheck::addon
