#include "core/camera/capture_pipeline.h"

#include <time.h>
#ifdef __linux__
#include <pthread.h>
#endif

#include <algorithm>
#include <chrono>

#include "core/camera/heap_trim.h"
#include "core/face/face_engine_stages.h"

namespace facecheck {

namespace {
double threadCpuMs() {
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void trimTimes(std::deque<int64_t>* times, int64_t now) {
  while (!times->empty() && now - times->front() > 2000000) times->pop_front();
}

// Named threads let a profiler (or /proc/<pid>/task/*/comm) tell the camera's CPU from the rest of the process.
void nameThisThread(const char* name) {
#ifdef __linux__
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

double rate(const std::deque<int64_t>& times, int64_t now) {
  if (times.size() < 2) return 0;
  double span = (now - times.front()) / 1e6;
  return span > 0 ? (times.size() - 1) / std::max(span, (times.back() - times.front()) / 1e6) : 0;
}
}  // namespace

CapturePipeline::CapturePipeline(std::unique_ptr<CameraSource> source, std::shared_ptr<FaceEngine> engine,
                                 PipelineConfig config, EventSink sink)
    : source_(std::move(source)), engine_(std::move(engine)), config_(std::move(config)), sink_(std::move(sink)),
      tracker_(config_.liveness) {
  config_.workers = std::max(1, config_.workers);
  status_.source = source_->name();
}

CapturePipeline::~CapturePipeline() { stop(); }

void CapturePipeline::start() {
  if (capture_.joinable()) return;
  stopping_ = false;
  // A new pipeline is not idle: the first idleAfterMs analyse every frame.
  lastFaceUs_ = steadyMicros();
  nextIdleAnalysisUs_ = 0;
  // Workers first: the capture thread joins them when the source ends.
  if (config_.process && engine_) {
    for (int i = 0; i < config_.workers; ++i) workers_.emplace_back([this] { workerLoop(); });
  }
  capture_ = std::thread([this] { captureLoop(); });
}

void CapturePipeline::stop() {
  stopping_ = true;
  source_->interrupt();
  queueCv_.notify_all();
  fusionCv_.notify_all();
  if (capture_.joinable()) capture_.join();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

bool CapturePipeline::interruptibleSleep(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stopping_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 20)));
  return !stopping_;
}

PipelineStatus CapturePipeline::status() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  PipelineStatus s = status_;
  int64_t now = steadyMicros();
  std::deque<int64_t> c = captureTimes_, a = analyseTimes_;
  trimTimes(&c, now);
  trimTimes(&a, now);
  s.captureFps = rate(c, now);
  s.analyseFps = rate(a, now);
  s.workerCpuMs = workerCpuMs_;
  return s;
}

std::shared_ptr<const LiveCapture> CapturePipeline::liveFace(int64_t maxAgeMs) const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (!live_ || !status_.connected) return nullptr;
  if ((steadyMicros() - live_->storedUs) / 1000 >= maxAgeMs) return nullptr;
  return live_;
}

void CapturePipeline::emitStatus() {
  if (!sink_) return;
  PipelineEvent e;
  e.type = PipelineEvent::Type::Status;
  e.status = status();
  if (!sink_(std::move(e))) {
    std::lock_guard<std::mutex> lock(stateMutex_);
    ++status_.reportsDropped;
  }
}

bool CapturePipeline::dueForAnalysis(int64_t now) {
  if (config_.idleDetectFps <= 0 || source_->lossless()) return true;
  const bool idle = now - lastFaceUs_.load() > static_cast<int64_t>(config_.idleAfterMs) * 1000;
  const auto periodUs = static_cast<int64_t>(1e6 / config_.idleDetectFps);
  bool changed, due = true;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    changed = status_.idle != idle;
    status_.idle = idle;
    if (idle) {
      if (now >= nextIdleAnalysisUs_) {
        // Keep the phase (on average exactly idleDetectFps whatever the frame rate), unless far behind, as
        // on entering idle.
        nextIdleAnalysisUs_ = now - nextIdleAnalysisUs_ > periodUs ? now + periodUs : nextIdleAnalysisUs_ + periodUs;
      } else {
        due = false;
        ++status_.framesIdleSkipped;
      }
    }
  }
  if (changed) emitStatus();
  trimHeapWhileIdle(now, idle);
  return due;
}

void CapturePipeline::trimHeapWhileIdle(int64_t now, bool idle) {
  if (!idle || config_.idleTrimMs <= 0) {
    nextHeapTrimUs_ = 0;  // the next idle period trims as it starts
    return;
  }
  if (now < nextHeapTrimUs_) return;
  nextHeapTrimUs_ = now + static_cast<int64_t>(config_.idleTrimMs) * 1000;
  returnFreeHeapToKernel();
  std::lock_guard<std::mutex> lock(stateMutex_);
  ++status_.heapTrims;
}

void CapturePipeline::captureLoop() {
  nameThisThread("fc-capture");
  const double cpuStart = threadCpuMs();
  RecordingWriter writer;
  bool recording = !config_.recordDir.empty();
  if (recording) {
    Result r = writer.open(config_.recordDir, config_.recordFormat);
    if (!r.ok()) {
      recording = false;
      std::lock_guard<std::mutex> lock(stateMutex_);
      status_.lastError = r.detail;
      status_.ended = true;
    }
  }
  bool connected = false, everConnected = false, endedNow = false;
  uint64_t captured = 0;
  const int pauseMs = source_->lossless() ? 0 : config_.reconnectMs;
  bool failedRecording = !config_.recordDir.empty() && !recording;
  while (!stopping_ && !failedRecording) {
    if (!connected) {
      Result r = source_->open();
      if (!r.ok()) {
        bool changed;
        {
          std::lock_guard<std::mutex> lock(stateMutex_);
          changed = status_.lastError != r.detail;
          status_.lastError = r.detail;
        }
        if (changed) emitStatus();
        if (source_->ended()) {
          endedNow = true;
          break;
        }
        if (!interruptibleSleep(pauseMs)) break;
        continue;
      }
      connected = true;
      {
        std::lock_guard<std::mutex> lock(stateMutex_);
        status_.connected = true;
        status_.lastError.clear();
        if (everConnected) ++status_.reconnects;
      }
      everConnected = true;
      emitStatus();
    }
    auto frame = std::make_shared<CameraFrame>();
    Result r = source_->read(frame.get());
    if (!r.ok()) {
      source_->close();
      connected = false;
      {
        std::lock_guard<std::mutex> lock(stateMutex_);
        status_.connected = false;
        status_.lastError = r.detail;
      }
      emitStatus();
      if (stopping_) break;
      if (source_->ended()) {
        endedNow = true;
        break;
      }
      if (!interruptibleSleep(pauseMs)) break;
      continue;
    }
    const int64_t now = steadyMicros();
    ++captured;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      ++status_.framesCaptured;
      status_.lastFrameUs = frame->timestampUs;
      captureTimes_.push_back(now);
      trimTimes(&captureTimes_, now);
      status_.captureCpuMs = threadCpuMs() - cpuStart;
    }
    if (recording) {
      Result w = writer.write(*frame);
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (!w.ok()) {
        status_.lastError = w.detail;
        recording = false;
        failedRecording = true;
      } else {
        ++status_.framesRecorded;
        if (config_.recordFrames && status_.framesRecorded >= config_.recordFrames) {
          recording = false;
          writer.close();
        }
      }
    }
    if (config_.process && engine_ && dueForAnalysis(now)) {
      std::unique_lock<std::mutex> lock(queueMutex_);
      if (source_->lossless()) {
        queueCv_.wait(lock, [&] { return stopping_ || static_cast<int>(queue_.size()) < config_.workers; });
        if (stopping_) break;
      } else if (static_cast<int>(queue_.size()) >= config_.workers) {
        queue_.pop_front();
        std::lock_guard<std::mutex> slock(stateMutex_);
        ++status_.framesDropped;
      }
      queue_.push_back(Item{std::move(frame), now, 0});
      queueCv_.notify_all();
    }
    if (!recording && config_.stopAfterRecording && !config_.recordDir.empty()) {
      endedNow = true;
      break;
    }
    if (config_.maxFrames && captured >= config_.maxFrames) {
      endedNow = true;
      break;
    }
  }
  writer.close();
  source_->close();
  {
    std::lock_guard<std::mutex> queueLock(queueMutex_);
    captureDone_ = true;
  }
  queueCv_.notify_all();
  // Wait for the workers to drain the queue before reporting the end.
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    status_.connected = false;
    status_.ended = status_.ended || endedNow || failedRecording;
    status_.captureCpuMs = threadCpuMs() - cpuStart;
  }
  emitStatus();
}

void CapturePipeline::workerLoop() {
  nameThisThread("fc-analyse");
  FrameStages stages(engine_.get());
  const LivenessConfig& cfg = config_.liveness;
  std::vector<FaceResult> faces;
  double cpuMark = threadCpuMs();
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      queueCv_.wait(lock, [&] { return stopping_ || !queue_.empty() || captureDone_; });
      if (stopping_ || (queue_.empty() && captureDone_)) break;
      item = std::move(queue_.front());
      queue_.pop_front();
      item.order = nextOrder_++;
      queueCv_.notify_all();
    }
    const int64_t t0 = steadyMicros();
    const CameraFrame& frame = *item.frame;
    PipelineEvent event;
    FrameReport& rep = event.frame;
    rep.sequence = frame.sequence;
    rep.timestampUs = frame.timestampUs;
    rep.truth = frame.truth;
    Result r = stages.begin(frame.rgb.data(), frame.rgb.size(), frame.width, frame.height);
    if (r.ok()) r = stages.detect(1, &faces);
    FaceResult face;
    if (r.ok() && !faces.empty()) {
      face = faces[0];
      rep.face = true;
      // Leaves idle detection: the capture thread hands every frame to analysis again from the next one.
      int64_t seen = lastFaceUs_.load();
      while (seen < item.capturedUs && !lastFaceUs_.compare_exchange_weak(seen, item.capturedUs)) {
      }
      rep.faces = static_cast<int>(faces.size());
      rep.box = face.box;
      if (stages.eyes(&face).ok()) {
        rep.eyeLeft = face.eyeLeft;
        rep.eyeRight = face.eyeRight;
      }
      rep.depth = measureDepth(frame, face, cfg);
      // The colour model (the costliest stage) on every colourEvery-th frame, and only where it can
      // change the decision: a veto with depth (colourMin > 0), or colour-only frames.
      bool matters = cfg.colourMin > 0 || !frame.hasDepth();
      bool wanted = matters && cfg.colourEvery > 0 && frame.sequence % static_cast<uint64_t>(cfg.colourEvery) == 0;
      if (wanted && stages.liveness(&face).ok()) rep.colourFrame = face.liveness;
    }
    {
      std::unique_lock<std::mutex> lock(fusionMutex_);
      fusionCv_.wait(lock, [&] { return stopping_ || fusionNext_ == item.order; });
      if (stopping_) break;
      if (rep.face) rep.decision = tracker_.update(frame.timestampUs, face, rep.depth, frame.hasDepth(), rep.colourFrame);
      else tracker_.noFace(frame.timestampUs);
      ++fusionNext_;
    }
    fusionCv_.notify_all();
    if (rep.face && rep.decision.live) {
      auto live = std::make_shared<LiveCapture>();
      live->cropSize = config_.cropSize;
      live->crop.resize(static_cast<size_t>(config_.cropSize) * config_.cropSize * 3);
      stages.crop(face.box, config_.cropGrow, config_.cropSize, live->crop.data());
      live->timestampUs = frame.timestampUs;
      live->storedUs = steadyMicros();
      live->box = face.box;
      std::copy(face.landmarks, face.landmarks + 68, live->landmarks);
      live->colour = rep.decision.colour;
      live->depth = rep.depth;
      live->frame = item.frame;
      std::lock_guard<std::mutex> lock(stateMutex_);
      live->id = ++liveCounter_;
      rep.liveId = live->id;
      live_ = std::move(live);
      ++status_.liveCaptures;
    }
    const int64_t t1 = steadyMicros();
    rep.analyseMs = (t1 - t0) / 1000.0;
    rep.latencyMs = (t1 - item.capturedUs) / 1000.0;
    double cpuNow = threadCpuMs();
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      ++status_.framesAnalysed;
      analyseTimes_.push_back(t1);
      trimTimes(&analyseTimes_, t1);
      workerCpuMs_ += cpuNow - cpuMark;
    }
    cpuMark = cpuNow;
    if (sink_ && !sink_(std::move(event))) {
      std::lock_guard<std::mutex> lock(stateMutex_);
      ++status_.reportsDropped;
    }
  }
  fusionCv_.notify_all();
}

}  // namespace facecheck
