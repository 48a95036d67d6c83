// JS binding of the device camera pipeline. openCamera() loads a face engine of its own (without the
// embedding networks: the camera never makes templates; its EngineConfig has no template weights) and the
// chosen source in a worker, then returns a handle; frames stay in C++ (core/camera/capture_pipeline.h) and only
// per-frame reports and status changes reach JavaScript, through a thread-safe function with a bounded
// queue (a full queue drops the report and counts it). The live face (crop, and on request the full
// frame) is read synchronously with liveFace().
#include <napi.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "addon/bindings.h"
#include "addon/js_errors.h"
#include "addon/js_options.h"
#include "core/camera/capture_pipeline.h"
#include "core/camera/replay_camera.h"
#include "core/camera/synthetic_camera.h"
#include "core/face_engine.h"
#include "core/ort_api.h"
#ifdef FACE_CHECK_HAVE_FREENECT
#include "core/camera/freenect_camera.h"
#endif

namespace facecheck::addon {

namespace {

LivenessConfig ReadLiveness(const Napi::Object& o) {
  LivenessConfig c;
  c.minFacePx = FloatOption(o, "minFacePx", c.minFacePx);
  c.maxDistanceMm = FloatOption(o, "maxDistanceMm", c.maxDistanceMm);
  c.minDepthCoverage = FloatOption(o, "minDepthCoverage", c.minDepthCoverage);
  c.minFaceWidthMm = FloatOption(o, "minFaceWidthMm", c.minFaceWidthMm);
  c.maxFaceWidthMm = FloatOption(o, "maxFaceWidthMm", c.maxFaceWidthMm);
  c.minPlaneRmsMm = FloatOption(o, "minPlaneRmsMm", c.minPlaneRmsMm);
  c.minNoseReliefMm = FloatOption(o, "minNoseReliefMm", c.minNoseReliefMm);
  c.maxNoseReliefMm = FloatOption(o, "maxNoseReliefMm", c.maxNoseReliefMm);
  c.maxEyeRecessMm = FloatOption(o, "maxEyeRecessMm", c.maxEyeRecessMm);
  c.maxDepthStepShare = FloatOption(o, "maxDepthStepShare", c.maxDepthStepShare);
  c.maxNoseOffset = FloatOption(o, "maxNoseOffset", c.maxNoseOffset);
  c.maxYawDeg = FloatOption(o, "maxYawDeg", c.maxYawDeg);
  c.maxPitchDeg = FloatOption(o, "maxPitchDeg", c.maxPitchDeg);
  c.windowFrames = IntOption(o, "windowFrames", c.windowFrames);
  c.minPassFrames = IntOption(o, "minPassFrames", c.minPassFrames);
  c.maxGapMs = IntOption(o, "maxGapMs", c.maxGapMs);
  c.minMicroMotionMm = FloatOption(o, "minMicroMotionMm", c.minMicroMotionMm);
  c.requireBlink = BoolOption(o, "requireBlink", c.requireBlink);
  c.blinkClosed = FloatOption(o, "blinkClosed", c.blinkClosed);
  c.blinkOpen = FloatOption(o, "blinkOpen", c.blinkOpen);
  c.blinkWindowMs = IntOption(o, "blinkWindowMs", c.blinkWindowMs);
  c.colourMin = FloatOption(o, "colourMin", c.colourMin);
  c.allowColourOnly = BoolOption(o, "allowColourOnly", c.allowColourOnly);
  c.colourOnlyThreshold = FloatOption(o, "colourOnlyThreshold", c.colourOnlyThreshold);
  c.colourEvery = IntOption(o, "colourEvery", c.colourEvery);
  return c;
}

Napi::Object BoxToJs(Napi::Env env, const FaceBox& b) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("x", b.x);
  o.Set("y", b.y);
  o.Set("width", b.size);
  o.Set("height", b.size);
  o.Set("score", b.score);
  return o;
}

Napi::Object DepthToJs(Napi::Env env, const DepthFeatures& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("measured", d.measured);
  o.Set("coverage", d.coverage);
  o.Set("depthMm", d.depthMm);
  o.Set("faceWidthMm", d.faceWidthMm);
  o.Set("eyeDistanceMm", d.eyeDistanceMm);
  o.Set("planeRmsMm", d.planeRmsMm);
  o.Set("curvedRmsMm", d.curvedRmsMm);
  o.Set("noseReliefMm", d.noseReliefMm);
  o.Set("eyeRecessMm", d.eyeRecessMm);
  o.Set("depthStepShare", d.depthStepShare);
  o.Set("noseOffset", d.noseOffset);
  o.Set("yawDeg", d.yawDeg);
  o.Set("pitchDeg", d.pitchDeg);
  o.Set("samples", d.samples);
  o.Set("failed", checkNames(d.failed));
  return o;
}

Napi::Object StatusToJs(Napi::Env env, const PipelineStatus& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("connected", s.connected);
  o.Set("ended", s.ended);
  o.Set("source", s.source);
  o.Set("lastError", s.lastError);
  o.Set("framesCaptured", static_cast<double>(s.framesCaptured));
  o.Set("framesAnalysed", static_cast<double>(s.framesAnalysed));
  o.Set("framesDropped", static_cast<double>(s.framesDropped));
  o.Set("reportsDropped", static_cast<double>(s.reportsDropped));
  o.Set("framesRecorded", static_cast<double>(s.framesRecorded));
  o.Set("reconnects", static_cast<double>(s.reconnects));
  o.Set("liveCaptures", static_cast<double>(s.liveCaptures));
  o.Set("captureFps", s.captureFps);
  o.Set("analyseFps", s.analyseFps);
  o.Set("workerCpuMs", s.workerCpuMs);
  o.Set("captureCpuMs", s.captureCpuMs);
  o.Set("lastFrameUs", static_cast<double>(s.lastFrameUs));
  return o;
}

Napi::Object EventToJs(Napi::Env env, const PipelineEvent& e) {
  if (e.type == PipelineEvent::Type::Status) {
    Napi::Object o = StatusToJs(env, e.status);
    o.Set("type", "status");
    return o;
  }
  const FrameReport& r = e.frame;
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", "frame");
  o.Set("sequence", static_cast<double>(r.sequence));
  o.Set("timestampUs", static_cast<double>(r.timestampUs));
  Napi::Object truth = Napi::Object::New(env);
  truth.Set("kind", r.truth.kind);
  truth.Set("presentation", static_cast<double>(r.truth.presentation));
  truth.Set("seed", std::to_string(r.truth.seed));
  o.Set("truth", truth);
  o.Set("face", r.face);
  o.Set("faces", r.faces);
  if (r.face) o.Set("box", BoxToJs(env, r.box));
  o.Set("eyeLeft", r.eyeLeft);
  o.Set("eyeRight", r.eyeRight);
  o.Set("colourFrame", r.colourFrame);
  o.Set("depth", DepthToJs(env, r.depth));
  Napi::Object d = Napi::Object::New(env);
  d.Set("live", r.decision.live);
  d.Set("failed", checkNames(r.decision.failed));
  d.Set("windowSize", r.decision.windowSize);
  d.Set("windowPass", r.decision.windowPass);
  d.Set("colour", r.decision.colour);
  d.Set("microMotionMm", r.decision.microMotionMm);
  d.Set("blinkSeen", r.decision.blinkSeen);
  d.Set("newTrack", r.decision.newTrack);
  o.Set("decision", d);
  o.Set("analyseMs", r.analyseMs);
  o.Set("latencyMs", r.latencyMs);
  o.Set("liveId", static_cast<double>(r.liveId));
  return o;
}

// ---- the handle ---------------------------------------------------------------------------------------

class CameraHandle;
// Open handles, so that an environment being torn down (process exit, worker thread end) stops their
// threads before the module goes away.
std::mutex gHandlesMutex;
std::set<CameraHandle*> gHandles;

struct OpenRequest {
  EngineConfig engine;
  std::string ortLibrary;
  std::string source;
  SyntheticOptions synthetic;
  std::vector<FaceTexture> photos;  // decoded by JS; faces are found here with the engine
  ReplayOptions replay;
#ifdef FACE_CHECK_HAVE_FREENECT
  FreenectOptions freenect;
#endif
  bool intrinsicsGiven = false;
  CameraIntrinsics intrinsics;
  PipelineConfig pipeline;
  bool reportFrames = true;
  int queueSize = 16;
};

class CameraHandle : public Napi::ObjectWrap<CameraHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "CameraHandle",
                       {InstanceMethod("start", &CameraHandle::Start), InstanceMethod("stop", &CameraHandle::Stop),
                        InstanceMethod("status", &CameraHandle::Status),
                        InstanceMethod("liveFace", &CameraHandle::LiveFace),
                        InstanceAccessor("textures", &CameraHandle::Textures, nullptr)});
  }
  explicit CameraHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CameraHandle>(info) {
    std::lock_guard<std::mutex> lock(gHandlesMutex);
    gHandles.insert(this);
  }
  ~CameraHandle() override {
    {
      std::lock_guard<std::mutex> lock(gHandlesMutex);
      gHandles.erase(this);
    }
    shutdown();
  }
  static void StopAll() {
    std::set<CameraHandle*> handles;
    {
      std::lock_guard<std::mutex> lock(gHandlesMutex);
      handles = gHandles;
    }
    // Threads only: the environment finalises the thread-safe functions itself.
    for (CameraHandle* h : handles)
      if (h->pipeline_) h->pipeline_->stop();
  }

  void adopt(std::unique_ptr<CapturePipeline> pipeline, Napi::ThreadSafeFunction tsfn, int textures) {
    pipeline_ = std::move(pipeline);
    tsfn_ = std::move(tsfn);
    textures_ = textures;
  }
  void shutdown() {
    if (pipeline_) pipeline_->stop();
    pipeline_.reset();
    if (tsfn_) {
      tsfn_.Release();
      tsfn_ = Napi::ThreadSafeFunction();
    }
  }
  std::unique_ptr<CapturePipeline> takePipeline() { return std::move(pipeline_); }
  void releaseTsfn() {
    if (tsfn_) {
      tsfn_.Release();
      tsfn_ = Napi::ThreadSafeFunction();
    }
  }

 private:
  Napi::Value Start(const Napi::CallbackInfo& info) {
    if (pipeline_ && !started_) {
      pipeline_->start();
      started_ = true;
    }
    return info.Env().Undefined();
  }
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value Status(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!pipeline_) {
      PipelineStatus s;
      s.lastError = "camera stopped";
      return StatusToJs(env, s);
    }
    return StatusToJs(env, pipeline_->status());
  }
  Napi::Value LiveFace(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!pipeline_) return env.Null();
    double maxAge = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 1000;
    bool withFrame = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
    std::shared_ptr<const LiveCapture> live = pipeline_->liveFace(static_cast<int64_t>(maxAge));
    if (!live) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", static_cast<double>(live->id));
    o.Set("ageMs", (steadyMicros() - live->storedUs) / 1000.0);
    o.Set("timestampUs", static_cast<double>(live->timestampUs));
    Napi::Uint8Array crop = Napi::Uint8Array::New(env, live->crop.size());
    std::copy(live->crop.begin(), live->crop.end(), crop.Data());
    o.Set("crop", crop);
    o.Set("cropSize", live->cropSize);
    o.Set("box", BoxToJs(env, live->box));
    Napi::Float32Array lm = Napi::Float32Array::New(env, 136);
    for (int i = 0; i < 68; ++i) {
      lm[2 * i] = live->landmarks[i].x;
      lm[2 * i + 1] = live->landmarks[i].y;
    }
    o.Set("landmarks", lm);
    o.Set("colour", live->colour);
    o.Set("depth", DepthToJs(env, live->depth));
    if (withFrame && live->frame) {
      Napi::Object f = Napi::Object::New(env);
      Napi::Uint8Array rgb = Napi::Uint8Array::New(env, live->frame->rgb.size());
      std::copy(live->frame->rgb.begin(), live->frame->rgb.end(), rgb.Data());
      f.Set("data", rgb);
      f.Set("width", live->frame->width);
      f.Set("height", live->frame->height);
      o.Set("frame", f);
    }
    return o;
  }
  Napi::Value Textures(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), textures_); }

  std::unique_ptr<CapturePipeline> pipeline_;
  Napi::ThreadSafeFunction tsfn_;
  bool started_ = false;
  int textures_ = 0;
};

class StopWorker : public Napi::AsyncWorker {
 public:
  StopWorker(Napi::Env env, CameraHandle* handle, std::unique_ptr<CapturePipeline> pipeline)
      : Napi::AsyncWorker(env, "face-check:camera-stop"), deferred_(Napi::Promise::Deferred::New(env)),
        handle_(handle), pipeline_(std::move(pipeline)) {
    handle->Ref();
  }
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    if (pipeline_) pipeline_->stop();
  }
  void OnOK() override {
    pipeline_.reset();
    handle_->releaseTsfn();
    handle_->Unref();
    deferred_.Resolve(Env().Undefined());
  }
  void OnError(const Napi::Error& e) override {
    handle_->Unref();
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  CameraHandle* handle_;
  std::unique_ptr<CapturePipeline> pipeline_;
};

Napi::Value CameraHandle::Stop(const Napi::CallbackInfo& info) {
  auto* worker = new StopWorker(info.Env(), this, takePipeline());
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

Napi::FunctionReference* gCameraConstructor = nullptr;

// Roughly frontal (yaw within about 25 degrees, roll within 20) and both eyes open, from the landmarks' geometry alone: the nose tip
// lies near the middle of the eyes, the eye line is level, the nose sits at a usual depth below the
// eyes, and each eye's aspect ratio (opening / width) is that of an open eye.
bool LooksFrontalWithOpenEyes(const FaceResult& f) {
  const PointF* p = f.landmarks;
  PointF l = f.points5[0], r = f.points5[1];
  float ex = r.x - l.x, ey = r.y - l.y, iod = std::hypot(ex, ey);
  if (iod < 1) return false;
  float along = ((p[30].x - l.x) * ex + (p[30].y - l.y) * ey) / (iod * iod);
  float below = (-(p[30].x - l.x) * ey + (p[30].y - l.y) * ex) / (iod * iod);
  float roll = std::fabs(std::atan2(ey, ex)) * 57.3f;
  auto ear = [p](int a) {
    float w = std::hypot(p[a + 3].x - p[a].x, p[a + 3].y - p[a].y);
    float h = std::hypot(p[a + 1].x - p[a + 5].x, p[a + 1].y - p[a + 5].y) + std::hypot(p[a + 2].x - p[a + 4].x, p[a + 2].y - p[a + 4].y);
    return w > 0 ? h / (2 * w) : 0.0f;
  };
  return along > 0.3f && along < 0.7f && below > 0.45f && below < 0.95f && roll < 20 && ear(36) > 0.2f && ear(42) > 0.2f;
}

// Crops each usable face of a photo (eyes at least 30 px apart, near frontal, eyes open) into a texture.
void FindFaceTextures(FaceEngine& engine, const FaceTexture& photo, std::vector<std::shared_ptr<const FaceTexture>>* out) {
  std::vector<FaceResult> faces;
  StageTimings timings;
  AnalyzeOptions options;
  options.embed = false;
  options.maxFaces = 16;
  if (!engine.analyze(photo.rgb.data(), photo.rgb.size(), photo.width, photo.height, options, &faces, &timings).ok()) return;
  for (const FaceResult& f : faces) {
    if (!f.analyzed || f.eyeDistance < 30 || f.sunglasses > 0.5f || !LooksFrontalWithOpenEyes(f)) continue;
    float side = f.box.size * 3.2f;
    int x0 = std::max(0, static_cast<int>(f.box.x + f.box.size / 2 - side / 2));
    int y0 = std::max(0, static_cast<int>(f.box.y + f.box.size * 0.45f - side / 2));
    int x1 = std::min(photo.width, static_cast<int>(f.box.x + f.box.size / 2 + side / 2));
    int y1 = std::min(photo.height, static_cast<int>(f.box.y + f.box.size * 0.45f + side / 2));
    if (x1 - x0 < 16 || y1 - y0 < 16) continue;
    auto t = std::make_shared<FaceTexture>();
    t->width = x1 - x0;
    t->height = y1 - y0;
    t->rgb.resize(static_cast<size_t>(t->width) * t->height * 3);
    for (int y = 0; y < t->height; ++y)
      std::copy(&photo.rgb[(static_cast<size_t>(y0 + y) * photo.width + x0) * 3],
                &photo.rgb[(static_cast<size_t>(y0 + y) * photo.width + x1) * 3], &t->rgb[static_cast<size_t>(y) * t->width * 3]);
    for (int i = 0; i < 68; ++i) t->landmarks[i] = PointF{f.landmarks[i].x - x0, f.landmarks[i].y - y0};
    out->push_back(std::move(t));
  }
}

class OpenWorker : public Napi::AsyncWorker {
 public:
  OpenWorker(Napi::Env env, std::unique_ptr<OpenRequest> request, Napi::ThreadSafeFunction tsfn)
      : Napi::AsyncWorker(env, "face-check:camera-open"), deferred_(Napi::Promise::Deferred::New(env)),
        request_(std::move(request)), tsfn_(std::move(tsfn)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    OpenRequest& q = *request_;
    bool needEngine = q.pipeline.process || q.source == "synthetic";
    if (needEngine) {
      std::string error;
      if (!loadOrtApi(q.ortLibrary, &error)) {
        result_ = Result::fail(Status::Internal, error);
        return;
      }
      std::unique_ptr<FaceEngine> engine;
      result_ = FaceEngine::load(q.engine, &engine);
      if (!result_.ok()) return;
      engine_ = std::shared_ptr<FaceEngine>(std::move(engine));
    }
    std::unique_ptr<CameraSource> source;
    if (q.source == "synthetic") {
      for (const FaceTexture& photo : q.photos) FindFaceTextures(*engine_, photo, &q.synthetic.faces);
      if (q.synthetic.faces.empty()) {
        result_ = Result::fail(Status::FieldsValidation, "no usable face (frontal, eyes open, >= 30 px between the eyes) in the synthetic camera's photos");
        return;
      }
      textures_ = static_cast<int>(q.synthetic.faces.size());
      if (q.intrinsicsGiven) q.synthetic.intrinsics = q.intrinsics;
      source = std::make_unique<SyntheticCamera>(q.synthetic);
    } else if (q.source == "replay") {
      source = std::make_unique<ReplayCamera>(q.replay);
#ifdef FACE_CHECK_HAVE_FREENECT
    } else if (q.source == "freenect") {
      if (q.intrinsicsGiven) { q.freenect.intrinsics = q.intrinsics; q.freenect.intrinsicsGiven = true; }
      source = std::make_unique<FreenectCamera>(q.freenect);
#endif
    } else {
      result_ = Result::fail(Status::FieldsValidation, "camera source \"" + q.source + "\" is not available in this build");
      return;
    }
    CapturePipeline::EventSink sink;
    if (tsfn_) {
      Napi::ThreadSafeFunction tsfn = tsfn_;
      bool frames = q.reportFrames;
      sink = [tsfn, frames](PipelineEvent&& e) mutable -> bool {
        if (e.type == PipelineEvent::Type::Frame && !frames) return true;
        auto* data = new PipelineEvent(std::move(e));
        napi_status s = tsfn.NonBlockingCall(data, [](Napi::Env env, Napi::Function cb, PipelineEvent* ev) {
          std::unique_ptr<PipelineEvent> owned(ev);
          if (env && cb) cb.Call({EventToJs(env, *owned)});
        });
        if (s != napi_ok) {
          delete data;
          return false;
        }
        return true;
      };
    }
    pipeline_ = std::make_unique<CapturePipeline>(std::move(source), engine_, q.pipeline, std::move(sink));
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!result_.ok()) {
      if (tsfn_) tsfn_.Release();
      deferred_.Reject(MakeError(env, result_).Value());
      return;
    }
    Napi::Object handle = gCameraConstructor->New({});
    CameraHandle::Unwrap(handle)->adopt(std::move(pipeline_), tsfn_, textures_);
    deferred_.Resolve(handle);
  }
  void OnError(const Napi::Error& e) override {
    if (tsfn_) tsfn_.Release();
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::unique_ptr<OpenRequest> request_;
  Napi::ThreadSafeFunction tsfn_;
  Result result_;
  std::shared_ptr<FaceEngine> engine_;
  std::unique_ptr<CapturePipeline> pipeline_;
  int textures_ = 0;
};

Napi::Value OpenCamera(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) return RejectWith(env, Status::FieldsValidation, "options required");
  Napi::Object o = info[0].As<Napi::Object>();
  auto q = std::make_unique<OpenRequest>();
  q->source = StringOption(o, "source", "synthetic");
  q->engine.modelDir = StringOption(o, "modelDir", "");
  q->ortLibrary = StringOption(o, "ortLibrary", "");
  q->engine.threads = 1;
  Napi::Value score = o.Get("minDetectionScore");
  if (score.IsNumber()) q->engine.minDetectionScore = score.As<Napi::Number>().FloatValue();

  Napi::Object intr = ObjectOption(o, "intrinsics");
  if (intr.Get("fx").IsNumber()) {
    q->intrinsicsGiven = true;
    q->intrinsics.fx = NumberOption(intr, "fx", 525);
    q->intrinsics.fy = NumberOption(intr, "fy", q->intrinsics.fx);
    q->intrinsics.cx = NumberOption(intr, "cx", 319.5);
    q->intrinsics.cy = NumberOption(intr, "cy", 239.5);
  }
  Napi::Object syn = ObjectOption(o, "synthetic");
  Result r = parseScenario(StringOption(syn, "scenario", ""), &q->synthetic.scenario);
  if (!r.ok()) return RejectWith(env, r.status, r.detail);
  q->synthetic.loop = BoolOption(syn, "loop", true);
  q->synthetic.seed = static_cast<uint64_t>(NumberOption(syn, "seed", 1));
  q->synthetic.fps = NumberOption(syn, "fps", 30);
  q->synthetic.realtime = BoolOption(syn, "realtime", true);
  Napi::Value photos = syn.Get("photos");
  if (photos.IsArray()) {
    Napi::Array a = photos.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) {
      Napi::Value pv = a.Get(i);
      if (!pv.IsObject()) continue;
      Napi::Object p = pv.As<Napi::Object>();
      Napi::Value data = p.Get("data");
      int w = IntOption(p, "width", 0), h = IntOption(p, "height", 0);
      if (!data.IsTypedArray() || data.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || w < 1 || h < 1)
        return RejectWith(env, Status::FieldsValidation, "synthetic.photos[] must be {data: Uint8Array, width, height}");
      Napi::Uint8Array u = data.As<Napi::Uint8Array>();
      if (u.ByteLength() != static_cast<size_t>(w) * h * 3)
        return RejectWith(env, Status::FieldsValidation, "synthetic.photos[] data must hold width*height RGB pixels");
      FaceTexture t;
      t.width = w;
      t.height = h;
      t.rgb.assign(u.Data(), u.Data() + u.ByteLength());
      q->photos.push_back(std::move(t));
    }
  }
  Napi::Object rep = ObjectOption(o, "replay");
  q->replay.path = StringOption(rep, "path", "");
  q->replay.loop = BoolOption(rep, "loop", true);
  q->replay.realtime = BoolOption(rep, "realtime", true);
#ifdef FACE_CHECK_HAVE_FREENECT
  Napi::Object fn = ObjectOption(o, "freenect");
  q->freenect.library = StringOption(fn, "library", q->freenect.library);
  q->freenect.depthMode = StringOption(fn, "depthMode", q->freenect.depthMode);
  q->freenect.deviceIndex = IntOption(fn, "deviceIndex", 0);
#endif
  PipelineConfig& pc = q->pipeline;
  pc.liveness = ReadLiveness(ObjectOption(o, "liveness"));
  pc.workers = std::max(1, std::min(8, IntOption(o, "workers", 1)));
  pc.process = BoolOption(o, "process", true);
  pc.reconnectMs = IntOption(o, "reconnectMs", pc.reconnectMs);
  pc.cropSize = std::max(16, std::min(1024, IntOption(o, "cropSize", pc.cropSize)));
  pc.cropGrow = FloatOption(o, "cropGrow", pc.cropGrow);
  pc.maxFrames = static_cast<uint64_t>(NumberOption(o, "maxFrames", 0));
  Napi::Object rec = ObjectOption(o, "record");
  pc.recordDir = StringOption(rec, "dir", "");
  std::string fmt = StringOption(rec, "format", "face-check");
  if (fmt != "face-check" && fmt != "fakenect")
    return RejectWith(env, Status::FieldsValidation, "record.format must be face-check or fakenect");
  pc.recordFormat = fmt == "fakenect" ? RecordingFormat::Fakenect : RecordingFormat::FaceCheck;
  pc.recordFrames = static_cast<uint64_t>(NumberOption(rec, "frames", 0));
  pc.stopAfterRecording = BoolOption(rec, "stopAfter", false);
  std::string reports = StringOption(o, "reports", "all");
  q->reportFrames = reports == "all";
  q->queueSize = std::max(1, std::min(1024, IntOption(o, "queueSize", 16)));
  if ((pc.process || q->source == "synthetic") && (q->engine.modelDir.empty() || q->ortLibrary.empty()))
    return RejectWith(env, Status::FieldsValidation, "modelDir and ortLibrary are required");

  Napi::ThreadSafeFunction tsfn;
  Napi::Value cb = o.Get("onEvent");
  if (cb.IsFunction()) {
    tsfn = Napi::ThreadSafeFunction::New(env, cb.As<Napi::Function>(), "face-check:camera-events",
                                         static_cast<size_t>(q->queueSize), 1);
    tsfn.Unref(env);
  }
  auto* worker = new OpenWorker(env, std::move(q), tsfn);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

Napi::Value CameraSources(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<std::string> names = {"synthetic", "replay"};
#ifdef FACE_CHECK_HAVE_FREENECT
  names.push_back("freenect");
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
  names.push_back("openni2");
#endif
  Napi::Array a = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); ++i) a.Set(static_cast<uint32_t>(i), names[i]);
  return a;
}

}  // namespace

void InitCameraBinding(Napi::Env env, Napi::Object exports) {
  gCameraConstructor = new Napi::FunctionReference(Napi::Persistent(CameraHandle::Define(env)));
  env.AddCleanupHook([] { CameraHandle::StopAll(); });
  exports.Set("openCamera", Napi::Function::New(env, OpenCamera));
  exports.Set("cameraSources", Napi::Function::New(env, CameraSources));
}

}  // namespace facecheck::addon
