// Each binding file registers its JS functions on the module's exports.
#pragma once
#include <napi.h>

namespace facecheck::addon {
void InitEngineBinding(Napi::Env env, Napi::Object exports);
void InitIndexBinding(Napi::Env env, Napi::Object exports);
void InitCameraBinding(Napi::Env env, Napi::Object exports);
void InitPageCacheBinding(Napi::Env env, Napi::Object exports);
void InitSealedBatchBinding(Napi::Env env, Napi::Object exports);
}  // namespace facecheck::addon
