// Reading optional fields of a JS options object: a missing or mistyped field gives the fallback (the
// TypeScript layer validates user input; these only guard the addon against a wrong call).
#pragma once

#include <napi.h>

#include <string>

namespace facecheck::addon {

inline double NumberOption(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

inline float FloatOption(const Napi::Object& o, const char* key, float fallback) {
  return static_cast<float>(NumberOption(o, key, fallback));
}

/** Integer fields: Int32Value truncates and maps NaN to 0, where a cast of a double would be undefined. */
inline int IntOption(const Napi::Object& o, const char* key, int fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : fallback;
}

inline bool BoolOption(const Napi::Object& o, const char* key, bool fallback) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : fallback;
}

inline std::string StringOption(const Napi::Object& o, const char* key, const std::string& fallback) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : fallback;
}

/** The nested object `key`, or an empty object. */
inline Napi::Object ObjectOption(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsObject() ? v.As<Napi::Object>() : Napi::Object::New(o.Env());
}

}  // namespace facecheck::addon
