// Native statuses as JS errors: the message is the detail, `status` the status's name (its row in the
// service's error table, src/error-table.ts, which the HTTP layer answers with).
#pragma once

#include <napi.h>

#include "core/status.h"

namespace facecheck::addon {

inline Napi::Error MakeError(Napi::Env env, const Result& r) {
  const char* name = statusName(r.status);
  Napi::Error e = Napi::Error::New(env, r.detail.empty() ? name : r.detail);
  e.Set("status", name);
  return e;
}

inline Napi::Promise RejectWith(Napi::Env env, Status s, const std::string& detail) {
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(MakeError(env, Result::fail(s, detail)).Value());
  return deferred.Promise();
}

}  // namespace facecheck::addon
