// The replay source: plays a face-check recording (recording.h) from disk. Paced by the recorded
// timestamps (realtime) or as fast as the pipeline takes frames (lossless, for tests and benchmarks);
// at the end it loops or reports the camera as disconnected.
#pragma once

#include <atomic>
#include <string>

#include "core/camera/camera.h"
#include "core/camera/recording.h"

namespace facecheck {

struct ReplayOptions {
  std::string path;
  bool loop = true;
  bool realtime = true;
};

class ReplayCamera : public CameraSource {
 public:
  explicit ReplayCamera(ReplayOptions options) : options_(std::move(options)) {}
  const char* name() const override { return "replay"; }
  Result open() override;
  Result read(CameraFrame* frame) override;
  void interrupt() override { closed_ = true; }
  bool lossless() const override { return !options_.realtime; }
  bool ended() const override { return ended_; }

 private:
  ReplayOptions options_;
  RecordingIndex index_;
  size_t next_ = 0;
  uint64_t sequence_ = 0;
  int64_t startUs_ = 0;       // steady time at which frame 0 of the current pass is due
  int64_t offsetUs_ = 0;      // timestamp added for every completed pass, so time keeps increasing
  std::atomic<bool> ended_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace facecheck
