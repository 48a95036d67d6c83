// State of the addon per Node environment (the main thread and each worker thread load it separately):
// class constructors and the open camera handles. Kept as the environment's instance data rather than in
// globals, so that one environment ending never leaves another with references into it.
#pragma once

#include <napi.h>

#include <memory>

namespace facecheck::addon {

class OpenCameras;  // camera_binding.cpp

struct AddonData {
  Napi::FunctionReference engineConstructor;
  Napi::FunctionReference cameraConstructor;
  // Shared with each camera handle, whose finaliser may run after the environment dropped this struct.
  std::shared_ptr<OpenCameras> cameras;

  // Creates the environment's data; called once, first thing in the module's Init.
  static AddonData& Create(Napi::Env env) {
    auto* data = new AddonData();
    env.SetInstanceData<AddonData>(data);
    return *data;
  }
  static AddonData& Of(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }
};

}  // namespace facecheck::addon
