// Native values as JS values, for the conversions the engine and camera bindings share. Arrays are copied
// into fresh typed arrays: the native memory is not tied to the JS heap.
#pragma once

#include <napi.h>

#include <cstdint>
#include <vector>

#include "core/face/face_types.h"

namespace facecheck::addon {

// {x, y, width, height, score}: detector boxes are square, so width and height are both the side.
Napi::Object BoxToJs(Napi::Env env, const FaceBox& box);
// n points as [x0, y0, x1, y1, ...].
Napi::Float32Array PointsToJs(Napi::Env env, const PointF* points, size_t n);
Napi::Float32Array FloatsToJs(Napi::Env env, const float* data, size_t n);
Napi::Uint8Array BytesToJs(Napi::Env env, const std::vector<uint8_t>& bytes);

}  // namespace facecheck::addon
