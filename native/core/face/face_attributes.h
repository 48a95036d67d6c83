// Per-face attribute models: eye state (fr_eye) and passive colour liveness (fr_liveness). Each reads its
// own crop of the source image, as its model was trained. (Head pose comes from the landmarks.)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/face/face_types.h"
#include "core/face/image_ops.h"
#include "core/ort/ort_session.h"

namespace facecheck {

class FaceAttributes {
 public:
  struct Workspace {
    std::vector<float> eyeInput, eyeOutput, liveInput, liveOutput;
  };
  static Result load(const std::string& modelDir, const SessionConfig& eyeConfig, const SessionConfig& livenessConfig,
                     std::unique_ptr<FaceAttributes>* out);
  void prepare(Workspace* ws) const;
  // Each fills its fields of `face` from the box and landmarks, using only its own workspace buffers,
  // so the two may run on different threads for one face.
  Result eyes(ImagePyramid& image, Workspace& ws, FaceResult* face) const;  // eyeLeft, eyeRight
  Result liveness(ImagePyramid& image, Workspace& ws, FaceResult* face) const;

 private:
  Result eyeOpenness(ImagePyramid& image, Workspace& ws, const PointF* pts, int first, float* openness) const;

  std::unique_ptr<OrtModel> eye_, liveness_;
};

}  // namespace facecheck
