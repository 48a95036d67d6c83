#include "core/camera/sources/replay/replay_camera.h"

#include <chrono>
#include <thread>

namespace facecheck {

Result ReplayCamera::open() {
  closed_ = false;
  if (ended_) return Result::fail(Status::CameraNotConnected, "the recording has ended");
  Result r = readRecordingIndex(options_.path, &index_);
  if (!r.ok()) return r;
  next_ = 0;
  startUs_ = steadyMicros();
  return {};
}

Result ReplayCamera::read(CameraFrame* frame) {
  if (closed_) return Result::fail(Status::CameraNotConnected, "replay closed");
  if (next_ >= index_.frames.size()) {
    if (!options_.loop) {
      ended_ = true;
      return Result::fail(Status::CameraNotConnected, "the recording has ended");
    }
    const auto& f = index_.frames;
    int64_t period = f.back().timestampUs - f.front().timestampUs;
    int64_t step = f.size() > 1 ? period / static_cast<int64_t>(f.size() - 1) : 33333;
    offsetUs_ += period + step;
    startUs_ += period + step;
    next_ = 0;
  }
  const RecordingIndex::Entry& e = index_.frames[next_];
  int64_t rel = e.timestampUs - index_.frames.front().timestampUs;
  if (options_.realtime) {
    // Sleep in short steps so close() interrupts promptly.
    for (;;) {
      if (closed_) return Result::fail(Status::CameraNotConnected, "replay closed");
      int64_t wait = startUs_ + rel - steadyMicros();
      if (wait <= 0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(wait, 20000)));
    }
  }
  Result r = readFrameFiles(index_, next_, frame);
  if (!r.ok()) return Result::fail(Status::CameraNotConnected, r.detail);
  frame->sequence = sequence_++;
  frame->timestampUs = options_.realtime ? startUs_ + rel : e.timestampUs + offsetUs_;
  frame->truth = FrameTruth{};
  ++next_;
  return {};
}

}  // namespace facecheck
