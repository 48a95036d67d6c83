#include "core/face_embedder.h"

#include <cmath>

namespace facecheck {

Result FaceEmbedder::load(const std::string& modelDir, const SessionConfig& config, bool flipAverage,
                          std::unique_ptr<FaceEmbedder>* out) {
  auto e = std::unique_ptr<FaceEmbedder>(new FaceEmbedder());
  e->flipAverage_ = flipAverage;
  Result r = OrtModel::load(modelDir + "/fr_feature.onnx", config, {"input", {1, 3, kAlignedSize, kAlignedSize}},
                            {{"output", {1, kEmbeddingSize}}}, &e->model_);
  if (r.ok()) *out = std::move(e);
  return r;
}

void FaceEmbedder::prepare(Workspace* ws) const {
  ws->input.resize(model_->input().elements());
  ws->output.resize(model_->output(0).elements());
}

Affine FaceEmbedder::alignment(const FaceResult& face) {
  return estimateSimilarity(face.points5, kAlignTemplate112, 5).inverse();
}

Result FaceEmbedder::embed(ImagePyramid& image, Workspace& ws, const Affine& aligned,
                           std::vector<float>* embedding) const {
  TensorNorm norm{ChannelOrder::RGB, {127, 127, 127}, {128, 128, 128}};
  embedding->assign(kEmbeddingSize, 0.0f);
  float* outputs[] = {ws.output.data()};
  for (int pass = 0; pass < (flipAverage_ ? 2 : 1); ++pass) {
    warpToTensor(image, aligned, kAlignedSize, kAlignedSize, norm, ws.input.data(), pass == 1);
    Result r = model_->run(ws.input.data(), outputs);
    if (!r.ok()) return r;
    for (int i = 0; i < kEmbeddingSize; ++i) (*embedding)[i] += ws.output[i];
  }
  double norm2 = 0;
  for (float v : *embedding) norm2 += static_cast<double>(v) * v;
  float inv = norm2 > 0 ? static_cast<float>(1.0 / std::sqrt(norm2)) : 0.0f;
  for (float& v : *embedding) v *= inv;
  return {};
}

}  // namespace facecheck
