// 68-point landmarks (fr_landmark: grey 64x64 crop of the square face box) and the 5 alignment points.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/face/face_types.h"
#include "core/face/image_ops.h"
#include "core/ort/ort_session.h"

namespace facecheck {

class Landmarker {
 public:
  struct Workspace {
    std::vector<float> input, output;
  };
  static Result load(const std::string& modelDir, const SessionConfig& config, std::unique_ptr<Landmarker>* out);
  void prepare(Workspace* ws) const;
  // Fills face->landmarks, face->points5 and face->eyeDistance from face->box.
  Result locate(ImagePyramid& image, Workspace& ws, FaceResult* face) const;

 private:
  Result run(ImagePyramid& image, Workspace& ws, const FaceBox& box, PointF* landmarks) const;
  std::unique_ptr<OrtModel> model_;
};

}  // namespace facecheck
