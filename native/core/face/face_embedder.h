// Face templates: the face is aligned by a 5-point similarity transform to the standard 112x112 template
// and embedded by two networks, fr_feature (512-d) and MobileFaceNet (192-d). The template is each
// network's L2-normalised embedding scaled by the square root of its weight, concatenated: with weights
// summing to 1 it has unit length, and the cosine of two templates is the weighted sum of the networks'
// cosines (the score fusion bench:fusion measured on LFW). Flip-averaging adds each network's embedding
// of the mirror image before normalising.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/face/face_types.h"
#include "core/face/image_ops.h"
#include "core/ort/ort_session.h"

namespace facecheck {

constexpr int kAlignedSize = 112;
constexpr int kEmbeddingNets = 2;                       // 0: fr_feature, 1: MobileFaceNet
constexpr std::array<int, kEmbeddingNets> kNetOutputSize = {512, 192};
constexpr int kTemplateSize = kNetOutputSize[0] + kNetOutputSize[1];

class FaceEmbedder {
 public:
  struct Workspace {
    std::vector<float> input;  // one aligned crop as a network input (both take 3x112x112)
  };
  // `weights`: each network's share of the template's cosine (from models/manifest.json `template`).
  static Result load(const std::string& modelDir, const SessionConfig& config,
                     const std::array<float, kEmbeddingNets>& weights, bool flipAverage,
                     std::unique_ptr<FaceEmbedder>* out);
  void prepare(Workspace* ws) const;
  // The source-to-aligned-crop mapping for a face's 5 points (destination -> source).
  static Affine alignment(const FaceResult& face);
  // Network `net`'s raw (unnormalised) embedding of the aligned crop, or of its mirror image, into `out`
  // (kNetOutputSize[net] floats).
  Result embedPass(int net, ImagePyramid& image, Workspace& ws, const Affine& aligned, bool mirror, float* out) const;
  // The template from each network's passes: passes[net][0] the crop's, passes[net][1] the mirror's or null.
  void combine(const std::array<std::array<const float*, 2>, kEmbeddingNets>& passes, std::vector<float>* embedding) const;
  bool flipAverage() const { return flipAverage_; }

 private:
  std::array<std::unique_ptr<OrtModel>, kEmbeddingNets> models_;
  std::array<float, kEmbeddingNets> scale_{};  // sqrt(weight)
  bool flipAverage_ = false;
};

}  // namespace facecheck
