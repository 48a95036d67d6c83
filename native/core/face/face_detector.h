// Face detection with the ultra-light detector (fr_detect, 320x240 input). The image is letterboxed
// (aspect kept) so faces are not distorted; boxes come back as squares in source pixels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/face/face_types.h"
#include "core/face/image_ops.h"
#include "core/ort/ort_session.h"

namespace facecheck {

class FaceDetector {
 public:
  struct Workspace {
    std::vector<float> input, scores, boxes;
  };
  static Result load(const std::string& modelDir, const SessionConfig& config, std::unique_ptr<FaceDetector>* out);
  void prepare(Workspace* ws) const;
  // Faces with score >= minScore after non-maximum suppression, largest first.
  Result detect(ImagePyramid& image, Workspace& ws, float minScore, std::vector<FaceBox>* faces) const;

 private:
  std::unique_ptr<OrtModel> model_;
};

}  // namespace facecheck
