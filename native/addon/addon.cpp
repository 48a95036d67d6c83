// Module entry: creates the environment's addon data, then exports the native statuses' names and the
// engine, index, camera, page-cache (`storage`) and sealed-batch bindings. Runs once per environment (the
// main thread and each worker thread).
#include <napi.h>

#include "addon/addon_data.h"
#include "addon/bindings.h"
#include "core/status.h"

namespace facecheck::addon {

// The native statuses' names, indexed by value: each names a row of the service's error table.
static Napi::Array ExportStatuses(Napi::Env env) {
  int count = 0;
  const char* const* names = statusNames(&count);
  Napi::Array out = Napi::Array::New(env, count);
  for (int i = 0; i < count; ++i) out.Set(i, names[i]);
  return out;
}

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AddonData::Create(env);
  exports.Set("nativeStatuses", ExportStatuses(env));
  InitEngineBinding(env, exports);
  InitIndexBinding(env, exports);
  InitCameraBinding(env, exports);
  InitPageCacheBinding(env, exports);
  InitSealedBatchBinding(env, exports);
  return exports;
}

}  // namespace facecheck::addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  return facecheck::addon::Init(env, exports);
}

NODE_API_MODULE(face_check, InitModule)
