// The freenect source: a Kinect v1 through libfreenect, loaded at run time with dlopen (so the addon
// never depends on the library; only its header is needed to build this file). Colour 640x480 RGB and
// depth either registered to the colour image in millimetres (FREENECT_DEPTH_REGISTERED, real
// libfreenect) or raw 11-bit disparity converted to millimetres (libfreenect's fakenect replay library,
// which offers only that mode; the recordings the tests write are already registered).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/camera/camera.h"

namespace facecheck {

struct FreenectOptions {
  std::string library = "libfreenect.so.0.5";  // dlopen name or path (LD_LIBRARY_PATH applies)
  std::string depthMode = "auto";              // auto | registered | raw
  int deviceIndex = 0;
  int stallMs = 2000;                          // no frame pair for this long: disconnected
  CameraIntrinsics intrinsics{525, 525, 319.5, 239.5};  // the Kinect v1's colour camera
};

class FreenectCamera : public CameraSource {
 public:
  explicit FreenectCamera(FreenectOptions options);
  ~FreenectCamera() override;
  const char* name() const override { return "freenect"; }
  Result open() override;
  Result read(CameraFrame* frame) override;
  void close() override;
  void interrupt() override { interrupted_ = true; }

  // Called from libfreenect's callbacks (inside process_events, on the capture thread).
  void onDepth(const void* data);
  void onVideo(const void* data);

 private:
  struct Api;
  Result loadApi();

  FreenectOptions options_;
  Api* api_ = nullptr;
  void* ctx_ = nullptr;
  void* dev_ = nullptr;
  bool raw_ = false;
  std::vector<uint16_t> depth_;
  std::vector<uint8_t> video_;
  bool haveDepth_ = false, haveVideo_ = false;
  uint64_t sequence_ = 0;
  std::atomic<bool> interrupted_{false};
};

}  // namespace facecheck
