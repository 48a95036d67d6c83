// Stage-by-stage access to a FaceEngine for the capture pipeline: detection with landmarks only, then
// whichever attribute models a frame needs (eye state for blinks, colour liveness), so a video frame
// costs only what the liveness decision uses. One FrameStages holds one engine workspace for its whole
// life (taken from the engine's pool, returned on destruction) and counts as an active analysis, so the
// engine cannot be closed under it. Not thread-safe itself: one per worker thread.
#pragma once

#include <memory>
#include <vector>

#include "core/face/face_engine.h"

namespace facecheck {

class FrameStages {
 public:
  explicit FrameStages(FaceEngine* engine);
  ~FrameStages();
  FrameStages(const FrameStages&) = delete;
  FrameStages& operator=(const FrameStages&) = delete;

  // Binds an interleaved RGB image; it must stay alive and unchanged until the next begin().
  Result begin(const uint8_t* rgb, size_t bytes, int width, int height);
  // Faces, largest first, with box, landmarks, points5 and eyeDistance; landmarks for the first
  // `maxLandmarks` only (the others keep their detector box).
  Result detect(int maxLandmarks, std::vector<FaceResult>* faces);
  Result eyes(FaceResult* face);      // eyeLeft, eyeRight
  Result liveness(FaceResult* face);  // colour liveness (fr_liveness)
  Result pose(FaceResult* face);      // yaw, pitch, roll
  // RGB crop of the square box grown by `grow` (1 = the box) resampled to size x size.
  void crop(const FaceBox& box, float grow, int size, uint8_t* out);

 private:
  FaceEngine* engine_;
  std::unique_ptr<FaceEngine::Workspace> ws_;
  bool bound_ = false;
};

}  // namespace facecheck
