// Module entry: creates the environment's addon data, then exports the error table and the engine, index,
// camera, storage and sealed-batch bindings. Runs once per environment (the main thread and each worker thread).
#include <napi.h>

#include "addon/addon_data.h"
#include "addon/bindings.h"
#include "core/error_table.h"

namespace facecheck::addon {

static Napi::Array ExportErrorTable(Napi::Env env) {
  int count = 0;
  const ErrorInfo* table = errorTable(&count);
  Napi::Array rows = Napi::Array::New(env, count);
  for (int i = 0; i < count; ++i) {
    Napi::Object row = Napi::Object::New(env);
    row.Set("status", i);
    row.Set("name", table[i].name);
    row.Set("code", table[i].code);
    row.Set("http", table[i].http);
    row.Set("message", table[i].message);
    rows.Set(i, row);
  }
  return rows;
}

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AddonData::Create(env);
  exports.Set("errorTable", ExportErrorTable(env));
  InitEngineBinding(env, exports);
  InitIndexBinding(env, exports);
  InitCameraBinding(env, exports);
  InitStorageBinding(env, exports);
  InitSealedBatchBinding(env, exports);
  return exports;
}

}  // namespace facecheck::addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  return facecheck::addon::Init(env, exports);
}

NODE_API_MODULE(face_check, InitModule)
