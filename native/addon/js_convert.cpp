#include "addon/js_convert.h"

#include <algorithm>

namespace facecheck::addon {

Napi::Object BoxToJs(Napi::Env env, const FaceBox& b) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("x", b.x);
  o.Set("y", b.y);
  o.Set("width", b.size);
  o.Set("height", b.size);
  o.Set("score", b.score);
  return o;
}

Napi::Float32Array PointsToJs(Napi::Env env, const PointF* points, size_t n) {
  Napi::Float32Array a = Napi::Float32Array::New(env, 2 * n);
  for (size_t i = 0; i < n; ++i) {
    a[2 * i] = points[i].x;
    a[2 * i + 1] = points[i].y;
  }
  return a;
}

Napi::Float32Array FloatsToJs(Napi::Env env, const float* data, size_t n) {
  Napi::Float32Array a = Napi::Float32Array::New(env, n);
  std::copy(data, data + n, a.Data());
  return a;
}

Napi::Uint8Array BytesToJs(Napi::Env env, const std::vector<uint8_t>& bytes) {
  Napi::Uint8Array a = Napi::Uint8Array::New(env, bytes.size());
  std::copy(bytes.begin(), bytes.end(), a.Data());
  return a;
}

}  // namespace facecheck::addon
