#include "core/face/face_detector.h"

#include <algorithm>
#include <cmath>

namespace facecheck {

namespace {
constexpr int kWidth = 320, kHeight = 240, kAnchors = 4420;
constexpr float kNmsIou = 0.4f;

struct Candidate {
  float x1, y1, x2, y2, score;
};

float iou(const Candidate& a, const Candidate& b) {
  float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (w <= 0 || h <= 0) return 0;
  float inter = w * h;
  float areaA = (a.x2 - a.x1) * (a.y2 - a.y1), areaB = (b.x2 - b.x1) * (b.y2 - b.y1);
  return inter / (areaA + areaB - inter);
}
}  // namespace

Result FaceDetector::load(const std::string& modelDir, const SessionConfig& config,
                          std::unique_ptr<FaceDetector>* out) {
  auto detector = std::unique_ptr<FaceDetector>(new FaceDetector());
  Result r = OrtModel::load(modelDir + "/fr_detect.onnx", config, {"input", {1, 3, kHeight, kWidth}},
                            {{"scores", {1, kAnchors, 2}}, {"boxes", {1, kAnchors, 4}}}, &detector->model_);
  if (r.ok()) *out = std::move(detector);
  return r;
}

void FaceDetector::prepare(Workspace* ws) const {
  ws->input.resize(model_->input().elements());
  ws->scores.resize(model_->output(0).elements());
  ws->boxes.resize(model_->output(1).elements());
}

Result FaceDetector::detect(ImagePyramid& image, Workspace& ws, float minScore, std::vector<FaceBox>* faces) const {
  const ImageView& base = image.base();
  // Letterbox: one scale for both axes, image centred; the border is the normalisation mean (tensor 0).
  double scale = std::max(static_cast<double>(base.width) / kWidth, static_cast<double>(base.height) / kHeight);
  double frameW = kWidth * scale, frameH = kHeight * scale;
  double originX = (base.width - frameW) / 2, originY = (base.height - frameH) / 2;
  TensorNorm norm{ChannelOrder::RGB, {127, 127, 127}, {128, 128, 128}};
  warpToTensor(image, rectToSize(originX, originY, frameW, frameH, kWidth, kHeight), kWidth, kHeight, norm,
               ws.input.data());
  float* outputs[] = {ws.scores.data(), ws.boxes.data()};
  Result r = model_->run(ws.input.data(), outputs);
  if (!r.ok()) return r;

  std::vector<Candidate> candidates;
  for (int i = 0; i < kAnchors; ++i) {
    float score = ws.scores[2 * i + 1];
    if (score < minScore) continue;
    const float* b = &ws.boxes[4 * i];
    Candidate c{static_cast<float>(originX + b[0] * frameW), static_cast<float>(originY + b[1] * frameH),
                static_cast<float>(originX + b[2] * frameW), static_cast<float>(originY + b[3] * frameH), score};
    if (c.x2 > c.x1 && c.y2 > c.y1) candidates.push_back(c);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.score > b.score;
  });
  std::vector<Candidate> kept;
  for (const Candidate& c : candidates) {
    bool suppressed = false;
    for (const Candidate& k : kept) {
      if (iou(c, k) > kNmsIou) { suppressed = true; break; }
    }
    if (!suppressed) kept.push_back(c);
  }
  faces->clear();
  for (const Candidate& k : kept) {
    // A square of the box height around the box centre: the crop the landmark model was trained on.
    float side = k.y2 - k.y1;
    float cx = (k.x1 + k.x2) / 2, cy = (k.y1 + k.y2) / 2;
    faces->push_back(FaceBox{cx - side / 2, cy - side / 2, side, k.score});
  }
  std::stable_sort(faces->begin(), faces->end(), [](const FaceBox& a, const FaceBox& b) { return a.size > b.size; });
  return {};
}

}  // namespace facecheck
