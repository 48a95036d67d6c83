// One camera interface for every depth camera source: colour frames with a depth map registered to the
// colour pixel grid (millimetres, 0 = no measurement), the colour camera's intrinsics and a capture time.
// Sources: synthetic (built in), replay (recordings on disk), freenect (Kinect v1) and openni2, each
// compiled only when its library is present. Pure C++: no N-API here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace facecheck {

struct CameraIntrinsics {
  double fx = 525, fy = 525;       // focal lengths, pixels
  double cx = 319.5, cy = 239.5;   // principal point, pixels
};

// Ground truth a synthetic source attaches to its frames (for tests and benchmarks); empty elsewhere.
struct FrameTruth {
  std::string kind;        // "live", "none", "print", ... (see synthetic_camera.h); empty: unknown
  int64_t presentation = -1;  // index of the scenario segment being shown
  uint64_t seed = 0;       // seed of that segment
};

struct CameraFrame {
  uint64_t sequence = 0;       // per source, increasing
  int64_t timestampUs = 0;     // capture time, microseconds of the source's clock (steady or virtual)
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;    // width*height*3, interleaved RGB
  std::vector<uint16_t> depth; // width*height millimetres registered to rgb, 0 = invalid; empty: no depth
  // width*height active-infrared levels registered to rgb (the projector-lit image a stereo camera computes
  // depth from), 0 = none there; empty: the source has no infrared.
  std::vector<uint8_t> ir;
  CameraIntrinsics intrinsics;
  FrameTruth truth;
  bool hasDepth() const { return !depth.empty(); }
};

// A source of frames. open() connects (or reconnects); read() blocks until the next frame and answers
// CameraNotConnected when the device is gone, stalls or the recording ended (the pipeline then closes it
// and retries open() later, unless ended()). open/read/close run on the one capture thread; interrupt()
// may be called from any thread to make a blocking open() or read() return promptly.
class CameraSource {
 public:
  virtual ~CameraSource() = default;
  virtual const char* name() const = 0;
  virtual Result open() = 0;
  virtual Result read(CameraFrame* frame) = 0;
  virtual void close() {}
  virtual void interrupt() = 0;
  // True when frames come as fast as they can be produced, with virtual timestamps (no pacing): the
  // pipeline then processes every frame instead of dropping the ones it has no time for.
  virtual bool lossless() const { return false; }
  // True once the source will never deliver again (a recording or scenario that does not loop).
  virtual bool ended() const { return false; }
};

// Helpers shared by the sources.
int64_t steadyMicros();

}  // namespace facecheck
