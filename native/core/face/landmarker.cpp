#include "core/face/landmarker.h"

#include <cmath>

namespace facecheck {

namespace {
constexpr int kSize = 64;

PointF mean(const PointF* pts, std::initializer_list<int> idx) {
  PointF m;
  for (int i : idx) { m.x += pts[i].x; m.y += pts[i].y; }
  m.x /= idx.size();
  m.y /= idx.size();
  return m;
}
}  // namespace

Result Landmarker::load(const std::string& modelDir, const SessionConfig& config, std::unique_ptr<Landmarker>* out) {
  auto lm = std::unique_ptr<Landmarker>(new Landmarker());
  Result r = OrtModel::load(modelDir + "/fr_landmark.onnx", config, {"input", {1, 1, kSize, kSize}},
                            {{"output", {1, 136}}}, &lm->model_);
  if (r.ok()) *out = std::move(lm);
  return r;
}

void Landmarker::prepare(Workspace* ws) const {
  ws->input.resize(model_->input().elements());
  ws->output.resize(model_->output(0).elements());
}

Result Landmarker::run(ImagePyramid& image, Workspace& ws, const FaceBox& b, PointF* landmarks) const {
  TensorNorm norm{ChannelOrder::Grey, {0, 0, 0}, {256, 256, 256}};
  warpToTensor(image, rectToSize(b.x, b.y, b.size, b.size, kSize, kSize), kSize, kSize, norm, ws.input.data());
  float* outputs[] = {ws.output.data()};
  Result r = model_->run(ws.input.data(), outputs);
  if (!r.ok()) return r;
  for (int i = 0; i < 68; ++i) {
    landmarks[i].x = b.x + ws.output[2 * i] * b.size;
    landmarks[i].y = b.y + ws.output[2 * i + 1] * b.size;
  }
  return {};
}

Result Landmarker::locate(ImagePyramid& image, Workspace& ws, FaceResult* face) const {
  Result r = run(image, ws, face->box, face->landmarks);
  if (!r.ok()) return r;
  const PointF* p = face->landmarks;
  face->points5[0] = mean(p, {37, 38, 40, 41});
  face->points5[1] = mean(p, {43, 44, 46, 47});
  face->points5[2] = p[30];
  face->points5[3] = mean(p, {48, 60});
  face->points5[4] = mean(p, {54, 64});
  face->eyeDistance = std::hypot(face->points5[1].x - face->points5[0].x, face->points5[1].y - face->points5[0].y);
  return {};
}

}  // namespace facecheck
