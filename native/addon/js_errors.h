// Native statuses as JS errors: message from the detail, `code`/`http` from the one error table.
#pragma once

#include <napi.h>

#include "core/error_table.h"

namespace facecheck::addon {

inline Napi::Error MakeError(Napi::Env env, const Result& r) {
  const ErrorInfo& info = errorInfo(r.status);
  Napi::Error e = Napi::Error::New(env, r.detail.empty() ? info.message : r.detail);
  e.Set("code", info.code);
  e.Set("status", info.name);
  e.Set("http", Napi::Number::New(env, info.http));
  return e;
}

inline Napi::Promise RejectWith(Napi::Env env, Status s, const std::string& detail) {
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(MakeError(env, Result::fail(s, detail)).Value());
  return deferred.Promise();
}

}  // namespace facecheck::addon
