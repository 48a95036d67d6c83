#include "core/face_engine.h"

#include "core/face_quality.h"

#include <chrono>

namespace facecheck {

namespace {
// Adds the time since the last lap to `*into`.
class Stopwatch {
 public:
  void lap(double* into) {
    auto now = std::chrono::steady_clock::now();
    *into += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};
}  // namespace

Result FaceEngine::load(const EngineConfig& config, std::unique_ptr<FaceEngine>* out) {
  auto engine = std::unique_ptr<FaceEngine>(new FaceEngine());
  engine->config_ = config;
  // Graph optimisation per model, as measured by bench/engine.ts: ORT's NCHWc layout transform (level ALL)
  // slows the embedding network about 3x here, so it stays at EXTENDED; the others gain from ALL.
  SessionConfig all{config.threads, ORT_ENABLE_ALL, ""};
  SessionConfig extended{config.threads, ORT_ENABLE_EXTENDED, ""};
  Result r = FaceDetector::load(config.modelDir, all, &engine->detector_);
  if (r.ok()) r = Landmarker::load(config.modelDir, all, &engine->landmarker_);
  if (r.ok()) r = FaceAttributes::load(config.modelDir, all, all, all, &engine->attributes_);
  if (r.ok()) r = FaceEmbedder::load(config.modelDir, extended, config.flipAverage, &engine->embedder_);
  if (r.ok()) *out = std::move(engine);
  return r;
}

std::unique_ptr<FaceEngine::Workspace> FaceEngine::acquire() {
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!pool_.empty()) {
      auto ws = std::move(pool_.back());
      pool_.pop_back();
      return ws;
    }
  }
  auto ws = std::make_unique<Workspace>();
  detector_->prepare(&ws->detector);
  landmarker_->prepare(&ws->landmarker);
  attributes_->prepare(&ws->attributes);
  embedder_->prepare(&ws->embedder);
  ws->aligned.resize(kAlignedSize * kAlignedSize * 3);
  return ws;
}

void FaceEngine::release(std::unique_ptr<Workspace> ws) {
  std::lock_guard<std::mutex> lock(poolMutex_);
  pool_.push_back(std::move(ws));
}

Result FaceEngine::analyzeFace(Workspace& ws, const AnalyzeOptions& options, FaceResult* face,
                               StageTimings* timings) const {
  Stopwatch watch;
  Result r = attributes_->estimate(ws.pyramid, ws.attributes, face);
  if (!r.ok()) return r;
  watch.lap(&timings->attributes);
  Affine aligned = FaceEmbedder::alignment(*face);
  warpToRgb(ws.pyramid, aligned, kAlignedSize, kAlignedSize, ws.aligned.data());
  measureQuality(ws.aligned.data(), face);
  if (options.crop) face->alignedCrop = ws.aligned;
  watch.lap(&timings->quality);
  if (options.embed) r = embedder_->embed(ws.pyramid, ws.embedder, aligned, &face->embedding);
  watch.lap(&timings->embed);
  face->analyzed = r.ok();
  return r;
}

Result FaceEngine::analyze(const uint8_t* rgb, size_t bytes, int width, int height, const AnalyzeOptions& options,
                           std::vector<FaceResult>* faces, StageTimings* timings) {
  if (!rgb || width < 1 || height < 1)
    return Result::fail(Status::FieldsValidation, "image must have at least one pixel");
  if (width > config_.maxDimension || height > config_.maxDimension ||
      static_cast<long long>(width) * height > config_.maxPixels)
    return Result::fail(Status::FieldsValidation, "image exceeds the pixel limit");
  if (bytes != static_cast<size_t>(width) * height * 3)
    return Result::fail(Status::FieldsValidation, "pixel buffer does not hold width*height RGB pixels");

  struct ActiveGuard {
    std::atomic<int>& n;
    explicit ActiveGuard(std::atomic<int>& c) : n(c) { ++n; }
    ~ActiveGuard() { --n; }
  } guard(active_);

  Stopwatch total, watch;
  *timings = StageTimings{};
  std::unique_ptr<Workspace> ws = acquire();
  ws->pyramid.reset(ImageView{rgb, width, height});
  faces->clear();
  Result r = detector_->detect(ws->pyramid, ws->detector, config_.minDetectionScore, &ws->boxes);
  watch.lap(&timings->detect);
  for (size_t i = 0; r.ok() && i < ws->boxes.size(); ++i) {
    FaceResult face;
    face.box = ws->boxes[i];
    r = landmarker_->locate(ws->pyramid, ws->landmarker, &face);
    watch.lap(&timings->landmarks);
    if (r.ok() && static_cast<int>(i) < options.maxFaces) r = analyzeFace(*ws, options, &face, timings);
    watch = Stopwatch();
    if (r.ok()) faces->push_back(std::move(face));
  }
  release(std::move(ws));
  total.lap(&timings->total);
  return r;
}

}  // namespace facecheck
