// OpenNI2's C API (OniCAPI.h), resolved at run time from libOpenNI2.so.0 with dlopen: the addon has no
// link-time dependency on OpenNI2, only its headers are needed to build. OpenNI.h, the SDK's C++ API, is
// inline code over these same functions, so nothing of the SDK is lost by calling them directly.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <OniCAPI.h>

#include "core/status.h"

namespace facecheck {

struct OpenNI2Api {
  void* handle = nullptr;
  decltype(&oniInitialize) initialize = nullptr;
  decltype(&oniShutdown) shutdown = nullptr;
  decltype(&oniGetExtendedError) extendedError = nullptr;
  decltype(&oniGetDeviceList) getDeviceList = nullptr;
  decltype(&oniReleaseDeviceList) releaseDeviceList = nullptr;
  decltype(&oniRegisterDeviceCallbacks) registerDeviceCallbacks = nullptr;
  decltype(&oniUnregisterDeviceCallbacks) unregisterDeviceCallbacks = nullptr;
  decltype(&oniWaitForAnyStream) waitForAnyStream = nullptr;
  decltype(&oniDeviceOpen) deviceOpen = nullptr;
  decltype(&oniDeviceClose) deviceClose = nullptr;
  decltype(&oniDeviceGetInfo) deviceGetInfo = nullptr;
  decltype(&oniDeviceGetSensorInfo) deviceGetSensorInfo = nullptr;
  decltype(&oniDeviceCreateStream) deviceCreateStream = nullptr;
  decltype(&oniDeviceEnableDepthColorSync) deviceEnableDepthColorSync = nullptr;
  decltype(&oniDeviceDisableDepthColorSync) deviceDisableDepthColorSync = nullptr;
  decltype(&oniDeviceSetProperty) deviceSetProperty = nullptr;
  decltype(&oniDeviceGetProperty) deviceGetProperty = nullptr;
  decltype(&oniDeviceIsPropertySupported) deviceIsPropertySupported = nullptr;
  decltype(&oniDeviceIsImageRegistrationModeSupported) deviceIsImageRegistrationModeSupported = nullptr;
  decltype(&oniStreamDestroy) streamDestroy = nullptr;
  decltype(&oniStreamStart) streamStart = nullptr;
  decltype(&oniStreamStop) streamStop = nullptr;
  decltype(&oniStreamReadFrame) streamReadFrame = nullptr;
  decltype(&oniStreamSetProperty) streamSetProperty = nullptr;
  decltype(&oniStreamGetProperty) streamGetProperty = nullptr;
  decltype(&oniFrameRelease) frameRelease = nullptr;
  decltype(&oniCoordinateConverterDepthToColor) depthToColor = nullptr;
  decltype(&oniCreateRecorder) createRecorder = nullptr;
  decltype(&oniRecorderAttachStream) recorderAttachStream = nullptr;
  decltype(&oniRecorderStart) recorderStart = nullptr;
  decltype(&oniRecorderStop) recorderStop = nullptr;
  decltype(&oniRecorderDestroy) recorderDestroy = nullptr;

  ~OpenNI2Api();
  // OpenNI's own words for the last failure (oniGetExtendedError), or `fallback` when it has none.
  std::string error(const char* fallback) const;
};

// Initialises OpenNI2 once for the process (the first call; later calls answer the first one's result).
// It is never shut down: libOpenNI2 does not survive an oniShutdown/oniInitialize cycle (a second
// initialisation in one process crashed inside it, on a thread handle left from the first), and a failed
// first initialisation (no driver) is not retried for the same reason: a driver installed later needs a
// restart of the process.
Result initialiseOpenNI2Once(const OpenNI2Api& api);

// Runs `task` on the one thread that makes every OpenNI2 call of the process, and waits for it. That
// thread lives as long as the process: libOpenNI2 keeps per-thread records (its error logger) which it
// later checks with pthread_kill(thread, 0), undefined for a thread that has ended — with the capture
// threads of stopped pipelines that crashed inside OpenNI2's calls. Runs inline when already on it.
void onOpenNI2Thread(const std::function<void()>& task);

// Loads `library` (a dlopen name or path) and resolves every function above.
Result loadOpenNI2(const std::string& library, std::unique_ptr<OpenNI2Api>* out);

// Whether `library` loads and has OpenNI2's C API, without initialising it (nothing else is touched).
bool openNI2Loadable(const std::string& library, std::string* detail);

}  // namespace facecheck
