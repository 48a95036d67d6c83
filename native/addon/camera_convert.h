// Camera pipeline values as JS values: depth measures, pipeline status, per-frame events and the live face.
#pragma once

#include <napi.h>

#include "core/camera/capture_pipeline.h"
#include "core/liveness/liveness.h"

namespace facecheck::addon {

Napi::Object DepthToJs(Napi::Env env, const DepthFeatures& depth);
Napi::Object StatusToJs(Napi::Env env, const PipelineStatus& status);
// {type: 'status', ...status} or {type: 'frame', ...report}.
Napi::Object EventToJs(Napi::Env env, const PipelineEvent& event);
// The live face with its crop, and the full frame when `withFrame` (and the capture kept it).
Napi::Object LiveCaptureToJs(Napi::Env env, const LiveCapture& live, bool withFrame);

}  // namespace facecheck::addon
