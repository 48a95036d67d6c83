#include "core/face/face_attributes.h"

#include <algorithm>
#include <cmath>

namespace facecheck {

namespace {
constexpr int kEye = 24, kLive = 128;
constexpr float kLivenessScale = 2.7f;  // context around the face the liveness model was trained with

void softmax(const float* logits, int n, float* out) {
  float mx = *std::max_element(logits, logits + n), sum = 0;
  for (int i = 0; i < n; ++i) sum += out[i] = std::exp(logits[i] - mx);
  for (int i = 0; i < n; ++i) out[i] /= sum;
}

}  // namespace

Result FaceAttributes::load(const std::string& modelDir, const SessionConfig& eyeConfig,
                            const SessionConfig& livenessConfig, std::unique_ptr<FaceAttributes>* out) {
  auto a = std::unique_ptr<FaceAttributes>(new FaceAttributes());
  Result r = OrtModel::load(modelDir + "/fr_eye.onnx", eyeConfig, {"input", {1, 1, kEye, kEye}},
                            {{"output", {1, 2}}}, &a->eye_);
  if (r.ok())
    r = OrtModel::load(modelDir + "/fr_liveness.onnx", livenessConfig, {"input", {1, 3, kLive, kLive}},
                       {{"output", {1, 3}}}, &a->liveness_);
  if (r.ok()) *out = std::move(a);
  return r;
}

void FaceAttributes::prepare(Workspace* ws) const {
  ws->eyeInput.resize(eye_->input().elements());
  ws->eyeOutput.resize(eye_->output(0).elements());
  ws->liveInput.resize(liveness_->input().elements());
  ws->liveOutput.resize(liveness_->output(0).elements());
}

Result FaceAttributes::eyeOpenness(ImagePyramid& image, Workspace& ws, const PointF* pts, int first,
                                   float* openness) const {
  // Square crop around the eye contour (points first..first+5), 1.6x the corner-to-corner width.
  PointF c;
  for (int i : {1, 2, 4, 5}) { c.x += pts[first + i].x / 4; c.y += pts[first + i].y / 4; }
  float side = std::max(2.0f, std::hypot(pts[first + 3].x - pts[first].x, pts[first + 3].y - pts[first].y) * 1.6f);
  TensorNorm norm{ChannelOrder::Grey, {0, 0, 0}, {255, 255, 255}};
  warpToTensor(image, rectToSize(c.x - side / 2, c.y - side / 2, side, side, kEye, kEye), kEye, kEye, norm,
               ws.eyeInput.data());
  float* outputs[] = {ws.eyeOutput.data()};
  Result r = eye_->run(ws.eyeInput.data(), outputs);
  if (!r.ok()) return r;
  float p[2];
  softmax(ws.eyeOutput.data(), 2, p);
  *openness = p[1];
  return {};
}

Result FaceAttributes::liveness(ImagePyramid& image, Workspace& ws, FaceResult* face) const {
  // 2.7x the box, shrunk to fit the image and shifted inside it: the model never saw padded borders.
  const ImageView& img = image.base();
  const FaceBox& b = face->box;
  float side = std::min({b.size * kLivenessScale, static_cast<float>(img.width), static_cast<float>(img.height)});
  float cx = b.x + b.size / 2, cy = b.y + b.size / 2;
  float x = std::clamp(cx - side / 2, 0.0f, img.width - side);
  float y = std::clamp(cy - side / 2, 0.0f, img.height - side);
  // BGR planes, raw 0..255: measured on ../shared/data/pad (NUAA), RGB input confuses the model.
  TensorNorm norm{ChannelOrder::BGR, {0, 0, 0}, {1, 1, 1}};
  warpToTensor(image, rectToSize(x, y, side, side, kLive, kLive), kLive, kLive, norm, ws.liveInput.data());
  float* outputs[] = {ws.liveOutput.data()};
  Result r = liveness_->run(ws.liveInput.data(), outputs);
  if (!r.ok()) return r;
  float p[3];
  softmax(ws.liveOutput.data(), 3, p);
  // Class 0 is the live face (classes 1 and 2 are attack kinds): NUAA real captures score ~1, prints ~0.
  face->liveness = p[0];
  return {};
}

Result FaceAttributes::eyes(ImagePyramid& image, Workspace& ws, FaceResult* face) const {
  Result r = eyeOpenness(image, ws, face->landmarks, 36, &face->eyeLeft);
  if (r.ok()) r = eyeOpenness(image, ws, face->landmarks, 42, &face->eyeRight);
  return r;
}

}  // namespace facecheck
