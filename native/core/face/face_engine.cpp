#include "core/face/face_engine.h"

#include "core/face/face_quality.h"
#include "core/face/landmark_pose.h"

#include <chrono>
#include <exception>
#include <new>
#include <system_error>
#include <thread>

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

class JoinOnExit {
 public:
  explicit JoinOnExit(std::thread& t) : t_(t) {}
  ~JoinOnExit() {
    if (t_.joinable()) t_.join();
  }
  JoinOnExit(const JoinOnExit&) = delete;
  JoinOnExit& operator=(const JoinOnExit&) = delete;

 private:
  std::thread& t_;
};

// The failure an exception caught in a worker thread stands for.
Result resultOf(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    return Result::fail(Status::Internal, "out of memory");
  } catch (const std::exception& e) {
    return Result::fail(Status::Internal, e.what());
  } catch (...) {
    return Result::fail(Status::Internal, "unexpected failure in a face analysis thread");
  }
}
}  // namespace

Result FaceEngine::load(const EngineConfig& config, std::unique_ptr<FaceEngine>* out) {
  auto engine = std::unique_ptr<FaceEngine>(new FaceEngine());
  engine->config_ = config;
  // Graph optimisation level ALL for every model: measured by bench/engine.ts on this ORT build (1.30),
  // ALL is as fast or faster than EXTENDED for each of them, the embedding network included. One intra-op
  // thread per session: parallelism comes from running stages side by side (two intra-op threads per
  // session instead measured slower end to end; docs/benchmarks.md).
  SessionConfig all{1, ORT_ENABLE_ALL, ""};
  // The detector (the one model the camera runs on every frame) without ONNX Runtime's memory pattern:
  // less resident memory at the same CPU a frame (bench:board, docs/board.md); the other models' inputs
  // are small, so their patterns are too.
  SessionConfig detector = all;
  detector.memoryPattern = false;
  Result r = FaceDetector::load(config.modelDir, detector, &engine->detector_);
  if (r.ok()) r = Landmarker::load(config.modelDir, all, &engine->landmarker_);
  if (r.ok()) r = FaceAttributes::load(config.modelDir, all, all, &engine->attributes_);
  const bool embeds = !config.templateNetworks.empty();
  if (r.ok() && embeds) r = FaceEmbedder::load(config.modelDir, all, config.templateNetworks, config.flipAverage, &engine->embedder_);
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
  if (embedder_) {
    ws->embedder.resize(embedder_->networks());
    ws->passOutput.resize(embedder_->networks());
    for (int net = 0; net < embedder_->networks(); ++net) {
      embedder_->prepare(net, &ws->embedder[net]);
      for (auto& out : ws->passOutput[net]) out.resize(embedder_->outputSize(net));
    }
  }
  ws->aligned.resize(kAlignedSize * kAlignedSize * 3);
  return ws;
}

void FaceEngine::releaseWorkspaces() {
  std::vector<std::unique_ptr<Workspace>> idle;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    idle.swap(pool_);
  }
  // freed here, outside the lock
}

void FaceEngine::release(std::unique_ptr<Workspace> ws) {
  std::lock_guard<std::mutex> lock(poolMutex_);
  pool_.push_back(std::move(ws));
}

Result FaceEngine::analyzeFace(Workspace& ws, const AnalyzeOptions& options, FaceResult* face,
                               StageTimings* timings) const {
  const Affine aligned = FaceEmbedder::alignment(*face);
  const bool embed = options.embed;
  const bool mirror = embed && embedder_->flipAverage();
  // Two lanes of about equal cost for a recognition (run side by side when threads > 1): lane A (this
  // thread) runs the first network and the quality measures, lane B the other networks, the colour
  // liveness and the eye states; each network's mirror pass, when flip-averaging, stays in its lane.
  // Lanes share only the read-only image.
  auto embedPasses = [&](int net, double* time) {
    Stopwatch watch;
    Result r = embedder_->embedPass(net, ws.pyramid, ws.embedder[net], aligned, false, ws.passOutput[net][0].data());
    if (r.ok() && mirror) r = embedder_->embedPass(net, ws.pyramid, ws.embedder[net], aligned, true, ws.passOutput[net][1].data());
    watch.lap(time);
    return r;
  };
  StageTimings laneB;
  Result resultB;
  auto runLaneB = [&] {
    for (int net = 1; embed && resultB.ok() && net < embedder_->networks(); ++net) resultB = embedPasses(net, &laneB.embed);
    if (resultB.ok() && options.liveness) {
      Stopwatch watch;
      resultB = attributes_->liveness(ws.pyramid, ws.attributes, face);
      watch.lap(&laneB.liveness);
      ++laneB.runs.liveness;
    }
    if (resultB.ok() && options.eyes) {
      Stopwatch watch;
      resultB = attributes_->eyes(ws.pyramid, ws.attributes, face);
      watch.lap(&laneB.eyes);
      ++laneB.runs.eyes;
    }
  };
  // Lane B's exceptions are caught in its own thread (an escaped one would end the process) and turned
  // into a Result after the join.
  std::exception_ptr laneBError;
  auto runLaneBCaught = [&] {
    try {
      runLaneB();
    } catch (...) {
      laneBError = std::current_exception();
    }
  };
  std::thread worker;
  if (config_.threads > 1) {
    try {
      worker = std::thread(runLaneBCaught);
    } catch (const std::system_error&) {
      // no thread to be had: lane B runs after lane A on this one
    }
  }
  // Joins lane B however lane A ends, so no exception leaves this scope with the thread still running.
  JoinOnExit joinLaneB(worker);

  StageTimings laneA;
  Result r;
  if (embed) {
    r = embedPasses(0, &laneA.embed);
    ++laneA.runs.embed;
  }
  if (r.ok() && (options.quality || options.crop)) {
    Stopwatch watch;
    warpToRgb(ws.pyramid, aligned, kAlignedSize, kAlignedSize, ws.aligned.data());
    if (options.quality) {
      measureQuality(ws.aligned.data(), face);
      ++laneA.runs.quality;
    }
    if (options.crop) face->alignedCrop = ws.aligned;
    watch.lap(&laneA.quality);
  }

  if (worker.joinable()) worker.join();
  else runLaneBCaught();
  timings->add(laneA);
  timings->add(laneB);
  if (!r.ok()) return r;
  if (laneBError) return resultOf(laneBError);
  if (!resultB.ok()) return resultB;
  if (embed) {
    Stopwatch combineWatch;
    std::vector<std::array<const float*, 2>> passes(embedder_->networks());
    for (int net = 0; net < embedder_->networks(); ++net) {
      passes[net] = {ws.passOutput[net][0].data(), mirror ? ws.passOutput[net][1].data() : nullptr};
    }
    embedder_->combine(passes, &face->embedding);
    combineWatch.lap(&timings->embed);
  }
  face->analyzed = true;
  return {};
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
  if (options.embed && !embedder_) return Result::fail(Status::Internal, "engine loaded without embedding models");

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
  timings->runs.detect = 1;
  for (size_t i = 0; r.ok() && i < ws->boxes.size(); ++i) {
    FaceResult face;
    face.box = ws->boxes[i];
    const bool analysed = static_cast<int>(i) < options.maxFaces;
    if (analysed || options.otherFaceLandmarks) {
      r = landmarker_->locate(ws->pyramid, ws->landmarker, &face);
      if (r.ok()) estimatePose(&face);
      watch.lap(&timings->landmarks);
      ++timings->runs.landmarks;
    }
    if (r.ok() && analysed) r = analyzeFace(*ws, options, &face, timings);
    watch = Stopwatch();
    if (r.ok()) faces->push_back(std::move(face));
  }
  release(std::move(ws));
  total.lap(&timings->total);
  return r;
}

}  // namespace facecheck
