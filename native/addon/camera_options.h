// openCamera()'s options object read into the native request. The TypeScript layer validates user input;
// this only reads fields (a missing or mistyped one gives the default) and rejects what would make the
// request meaningless.
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include "core/camera/capture_pipeline.h"
#include "core/camera/source_registry.h"
#include "core/status.h"
#include "core/face/face_engine.h"

namespace facecheck::addon {

struct OpenRequest {
  // The synthetic camera's photos stay in their JavaScript arrays (camera.photos points into them): these
  // references keep the arrays alive until the request is destroyed, on the JavaScript thread.
  std::vector<Napi::Reference<Napi::Uint8Array>> photoArrays;
  EngineConfig engine;
  std::string ortLibrary;
  CameraSourceOptions camera;
  PipelineConfig pipeline;
  bool reportFrames = true;
  int queueSize = 16;
  // Whether a face engine must be loaded: to analyse frames, or to find the synthetic camera's faces.
  bool needsEngine() const { return pipeline.process || camera.source == "synthetic"; }
};

Result ReadOpenRequest(const Napi::Object& options, OpenRequest* request);

}  // namespace facecheck::addon
