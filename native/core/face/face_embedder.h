// Face templates: the face is aligned by a 5-point similarity transform to the standard 112x112 template
// and embedded by the template's networks (models/manifest.json `template`, passed in by the addon: files,
// tensor names, input sizes, normalisation, output sizes, weights). The template is each network's
// L2-normalised embedding scaled by the square root of its weight, concatenated: with weights summing to 1
// it has unit length, and the cosine of two templates is the weighted sum of the networks' cosines (the
// score fusion bench:fusion measured on LFW). Flip-averaging adds each network's embedding of the mirror
// image before normalising.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/face/face_types.h"
#include "core/face/image_ops.h"
#include "core/ort/ort_session.h"

namespace facecheck {

// The aligned crop's side: the 5-point template's frame, and the crop the quality measures read.
constexpr int kAlignedSize = 112;

// One network of the template, as the manifest describes it.
struct EmbeddingNetwork {
  std::string file;    // in the model folder
  std::string input;   // tensor names
  std::string output;
  int width = 0;       // the NCHW float32 input (3 channels): the aligned crop warped to this size
  int height = 0;
  TensorNorm norm;     // channel order, mean and std: value = (pixel - mean) / std
  int outputSize = 0;  // values in its embedding
  float weight = 0;    // share of the template's cosine (the weights sum to 1)
};

class FaceEmbedder {
 public:
  struct Workspace {
    std::vector<float> input;  // one aligned crop as the network's input
  };
  static Result load(const std::string& modelDir, const SessionConfig& config,
                     const std::vector<EmbeddingNetwork>& networks, bool flipAverage,
                     std::unique_ptr<FaceEmbedder>* out);
  int networks() const { return static_cast<int>(nets_.size()); }
  int outputSize(int net) const { return nets_[net].outputSize; }
  void prepare(int net, Workspace* ws) const;
  // The source-to-aligned-crop mapping for a face's 5 points (destination -> source).
  static Affine alignment(const FaceResult& face);
  // Network `net`'s raw (unnormalised) embedding of the aligned crop, or of its mirror image, into `out`
  // (outputSize(net) floats).
  Result embedPass(int net, ImagePyramid& image, Workspace& ws, const Affine& aligned, bool mirror, float* out) const;
  // The template from each network's passes: passes[net][0] the crop's, passes[net][1] the mirror's or null.
  void combine(const std::vector<std::array<const float*, 2>>& passes, std::vector<float>* embedding) const;
  bool flipAverage() const { return flipAverage_; }

 private:
  std::vector<EmbeddingNetwork> nets_;
  std::vector<std::unique_ptr<OrtModel>> models_;
  std::vector<float> scale_;  // sqrt(weight)
  int templateSize_ = 0;
  bool flipAverage_ = false;
};

}  // namespace facecheck
