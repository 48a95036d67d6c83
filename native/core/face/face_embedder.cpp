#include "core/face/face_embedder.h"

#include <cmath>

namespace facecheck {

Result FaceEmbedder::load(const std::string& modelDir, const SessionConfig& config,
                          const std::vector<EmbeddingNetwork>& networks, bool flipAverage,
                          std::unique_ptr<FaceEmbedder>* out) {
  // The addon's caller checked the manifest; these checks only keep a bad call from reaching ONNX Runtime.
  if (networks.empty()) return Result::fail(Status::FieldsValidation, "the template needs at least one network");
  float total = 0;
  for (const EmbeddingNetwork& net : networks) {
    if (!(net.weight > 0)) return Result::fail(Status::FieldsValidation, "template weights must be positive");
    if (net.width < 1 || net.height < 1 || net.outputSize < 1)
      return Result::fail(Status::FieldsValidation, "template network sizes must be positive");
    total += net.weight;
  }
  if (std::fabs(total - 1.0f) > 1e-3f) return Result::fail(Status::FieldsValidation, "template weights must sum to 1");
  auto e = std::unique_ptr<FaceEmbedder>(new FaceEmbedder());
  e->flipAverage_ = flipAverage;
  e->nets_ = networks;
  for (const EmbeddingNetwork& net : networks) {
    e->scale_.push_back(std::sqrt(net.weight / total));
    e->templateSize_ += net.outputSize;
    e->models_.emplace_back();
    Result r = OrtModel::load(modelDir + "/" + net.file, config, {net.input, {1, 3, net.height, net.width}},
                              {{net.output, {1, net.outputSize}}}, &e->models_.back());
    if (!r.ok()) return r;
  }
  *out = std::move(e);
  return {};
}

void FaceEmbedder::prepare(int net, Workspace* ws) const { ws->input.resize(models_[net]->input().elements()); }

Affine FaceEmbedder::alignment(const FaceResult& face) {
  return estimateSimilarity(face.points5, kAlignTemplate112, 5).inverse();
}

Result FaceEmbedder::embedPass(int net, ImagePyramid& image, Workspace& ws, const Affine& aligned, bool mirror,
                               float* out) const {
  const EmbeddingNetwork& spec = nets_[net];
  // The aligned crop's frame scaled to the network's input (the identity at 112x112).
  const double sx = static_cast<double>(kAlignedSize) / spec.width, sy = static_cast<double>(kAlignedSize) / spec.height;
  Affine toInput = aligned;
  toInput.a *= sx;
  toInput.d *= sx;
  toInput.b *= sy;
  toInput.e *= sy;
  warpToTensor(image, toInput, spec.width, spec.height, spec.norm, ws.input.data(), mirror);
  float* outputs[] = {out};
  return models_[net]->run(ws.input.data(), outputs);
}

void FaceEmbedder::combine(const std::vector<std::array<const float*, 2>>& passes,
                           std::vector<float>* embedding) const {
  embedding->resize(templateSize_);
  float* part = embedding->data();
  for (int net = 0; net < networks(); ++net) {
    const int n = nets_[net].outputSize;
    const float* first = passes[net][0];
    const float* second = passes[net][1];
    double norm2 = 0;
    for (int i = 0; i < n; ++i) {
      float v = first[i] + (second ? second[i] : 0.0f);
      part[i] = v;
      norm2 += static_cast<double>(v) * v;
    }
    float k = norm2 > 0 ? static_cast<float>(scale_[net] / std::sqrt(norm2)) : 0.0f;
    for (int i = 0; i < n; ++i) part[i] *= k;
    part += n;
  }
}

}  // namespace facecheck
