// Face templates (fr_feature): the face is aligned by a 5-point similarity transform to the standard
// 112x112 template; the template is the L2-normalised sum of the embeddings of the crop and its mirror.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/face_types.h"
#include "core/image_ops.h"
#include "core/ort_session.h"

namespace facecheck {

constexpr int kAlignedSize = 112;
constexpr int kEmbeddingSize = 512;

class FaceEmbedder {
 public:
  struct Workspace {
    std::vector<float> input, output;
  };
  static Result load(const std::string& modelDir, const SessionConfig& config, bool flipAverage,
                     std::unique_ptr<FaceEmbedder>* out);
  void prepare(Workspace* ws) const;
  // The source-to-aligned-crop mapping for a face's 5 points (destination -> source).
  static Affine alignment(const FaceResult& face);
  // The raw (unnormalised) embedding of the aligned crop, or of its mirror image, into `out` (512 floats).
  Result embedPass(ImagePyramid& image, Workspace& ws, const Affine& aligned, bool mirror, float* out) const;
  // The template: the L2-normalised sum of the passes' embeddings.
  static void combine(const float* first, const float* second, std::vector<float>* embedding);
  bool flipAverage() const { return flipAverage_; }

 private:
  std::unique_ptr<OrtModel> model_;
  bool flipAverage_ = true;
};

}  // namespace facecheck
