#include "core/face/face_engine_stages.h"

#include "core/face/landmark_pose.h"

namespace facecheck {

FrameStages::FrameStages(FaceEngine* engine) : engine_(engine) {
  ++engine_->active_;
  ws_ = engine_->acquire();
}

FrameStages::~FrameStages() {
  engine_->release(std::move(ws_));
  --engine_->active_;
}

Result FrameStages::begin(const uint8_t* rgb, size_t bytes, int width, int height) {
  bound_ = false;
  if (!rgb || width < 1 || height < 1 || bytes != static_cast<size_t>(width) * height * 3)
    return Result::fail(Status::FieldsValidation, "frame must be width*height RGB pixels");
  if (width > engine_->config_.maxDimension || height > engine_->config_.maxDimension)
    return Result::fail(Status::FieldsValidation, "frame exceeds the pixel limit");
  ws_->pyramid.reset(ImageView{rgb, width, height});
  bound_ = true;
  return {};
}

Result FrameStages::detect(int maxLandmarks, std::vector<FaceResult>* faces) {
  faces->clear();
  if (!bound_) return Result::fail(Status::Internal, "no frame bound");
  Result r = engine_->detector_->detect(ws_->pyramid, ws_->detector, engine_->config_.minDetectionScore, &ws_->boxes);
  for (size_t i = 0; r.ok() && i < ws_->boxes.size(); ++i) {
    FaceResult face;
    face.box = ws_->boxes[i];
    if (static_cast<int>(i) < maxLandmarks) r = engine_->landmarker_->locate(ws_->pyramid, ws_->landmarker, &face);
    if (r.ok()) faces->push_back(std::move(face));
  }
  return r;
}

Result FrameStages::eyes(FaceResult* face) {
  if (!bound_) return Result::fail(Status::Internal, "no frame bound");
  return engine_->attributes_->eyes(ws_->pyramid, ws_->attributes, face);
}

Result FrameStages::liveness(FaceResult* face) {
  if (!bound_) return Result::fail(Status::Internal, "no frame bound");
  return engine_->attributes_->liveness(ws_->pyramid, ws_->attributes, face);
}

Result FrameStages::pose(FaceResult* face) {
  // Head pose comes from the landmarks (see landmark_pose.h), no model run.
  estimatePose(face);
  return {};
}

void FrameStages::crop(const FaceBox& box, float grow, int size, uint8_t* out) {
  float side = box.size * grow;
  float x = box.x + box.size / 2 - side / 2, y = box.y + box.size / 2 - side / 2;
  warpToRgb(ws_->pyramid, rectToSize(x, y, side, side, size, size), size, size, out);
}

}  // namespace facecheck
