// JS binding of the device camera pipeline. openCamera() loads a face engine of its own (without the
// embedding networks: the camera never makes templates; its EngineConfig has no template weights; its
// models' ONNX Runtime sessions are those of the API engine when that is loaded, core/ort/ort_session.h) and
// the chosen source in a worker, then returns a handle; frames stay in C++ (core/camera/capture_pipeline.h) and only
// per-frame reports and status changes reach JavaScript, through a thread-safe function with a bounded
// queue (a full queue drops the report and counts it). The live face (crop, and on request the full
// frame) is read synchronously with liveFace(). Options are read in camera_options.cpp, values converted
// in camera_convert.cpp, the source made in core/camera/source_registry.cpp.
#include <napi.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "addon/addon_data.h"
#include "addon/bindings.h"
#include "addon/camera_convert.h"
#include "addon/camera_options.h"
#include "addon/js_options.h"
#include "addon/js_errors.h"
#include "core/camera/capture_pipeline.h"
#include "core/camera/source_registry.h"
#include "core/face/face_engine.h"
#include "core/ort/ort_api.h"

namespace facecheck::addon {

class CameraHandle;

// The open handles of one environment, so that its teardown (process exit, worker thread end) stops
// their threads before the module goes away, and only its own.
class OpenCameras {
 public:
  void add(CameraHandle* h) {
    std::lock_guard<std::mutex> lock(mutex_);
    handles_.insert(h);
  }
  void remove(CameraHandle* h) {
    std::lock_guard<std::mutex> lock(mutex_);
    handles_.erase(h);
  }
  std::set<CameraHandle*> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return handles_;
  }

 private:
  mutable std::mutex mutex_;
  std::set<CameraHandle*> handles_;
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
  explicit CameraHandle(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<CameraHandle>(info), cameras_(AddonData::Of(info.Env()).cameras) {
    cameras_->add(this);
  }
  ~CameraHandle() override {
    cameras_->remove(this);
    shutdown();
  }
  // Threads only: the environment finalises the thread-safe functions itself.
  static void StopAll(const OpenCameras& cameras) {
    for (CameraHandle* h : cameras.snapshot())
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
    releaseTsfn();
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
    return LiveCaptureToJs(env, *live, withFrame);
  }
  Napi::Value Textures(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), textures_); }

  std::shared_ptr<OpenCameras> cameras_;
  std::unique_ptr<CapturePipeline> pipeline_;
  Napi::ThreadSafeFunction tsfn_;
  bool started_ = false;
  int textures_ = 0;
};

namespace {

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

// Pipeline events to JS through the thread-safe function; frame reports only when asked for. False when
// the queue is full (the pipeline counts the dropped report).
CapturePipeline::EventSink EventSinkFor(Napi::ThreadSafeFunction tsfn, bool reportFrames) {
  if (!tsfn) return {};
  return [tsfn, reportFrames](PipelineEvent&& e) mutable -> bool {
    if (e.type == PipelineEvent::Type::Frame && !reportFrames) return true;
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

class OpenWorker : public Napi::AsyncWorker {
 public:
  OpenWorker(Napi::Env env, std::unique_ptr<OpenRequest> request, Napi::ThreadSafeFunction tsfn)
      : Napi::AsyncWorker(env, "face-check:camera-open"), deferred_(Napi::Promise::Deferred::New(env)),
        request_(std::move(request)), tsfn_(std::move(tsfn)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    OpenRequest& q = *request_;
    if (q.needsEngine()) {
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
    result_ = makeCameraSource(q.camera, engine_.get(), &source, &textures_);
    if (!result_.ok()) return;
    pipeline_ = std::make_unique<CapturePipeline>(std::move(source), engine_, q.pipeline, EventSinkFor(tsfn_, q.reportFrames));
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!result_.ok()) {
      if (tsfn_) tsfn_.Release();
      deferred_.Reject(MakeError(env, result_).Value());
      return;
    }
    Napi::Object handle = AddonData::Of(env).cameraConstructor.New({});
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
  Result r = ReadOpenRequest(o, q.get());
  if (!r.ok()) return RejectWith(env, r.status, r.detail);

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

Napi::Array Strings(Napi::Env env, const std::vector<std::string>& items) {
  Napi::Array a = Napi::Array::New(env, items.size());
  for (size_t i = 0; i < items.size(); ++i) a.Set(static_cast<uint32_t>(i), items[i]);
  return a;
}

// The registry as data: every compiled source, its options, the USB devices it drives and the recordings
// it plays. The service validates the ini's [camera.<source>] sections and writes udev rules from this.
Napi::Value CameraCatalog(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<const CameraSourceEntry*>& rows = cameraSourceRegistry();
  Napi::Array out = Napi::Array::New(env, rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const CameraSourceEntry& e = *rows[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", e.name);
    o.Set("summary", e.summary);
    o.Set("hint", e.hint);
    o.Set("library", e.library);
    o.Set("libraryOption", e.libraryOption);
    Napi::Array options = Napi::Array::New(env, e.options.size());
    for (size_t k = 0; k < e.options.size(); ++k) {
      const CameraOptionSpec& spec = e.options[k];
      Napi::Object so = Napi::Object::New(env);
      so.Set("key", spec.key);
      so.Set("type", optionTypeName(spec.type));
      so.Set("default", spec.defaultValue);
      if (spec.type == OptionType::Integer || spec.type == OptionType::Number) {
        so.Set("min", spec.min);
        so.Set("max", spec.max);
      }
      if (spec.type == OptionType::Choice) so.Set("choices", Strings(env, spec.choices));
      so.Set("doc", spec.doc);
      so.Set("path", spec.path);
      so.Set("settable", spec.settable);
      options.Set(static_cast<uint32_t>(k), so);
    }
    o.Set("options", options);
    Napi::Array usb = Napi::Array::New(env, e.usb.size());
    for (size_t k = 0; k < e.usb.size(); ++k) {
      Napi::Object u = Napi::Object::New(env);
      u.Set("vendor", e.usb[k].vendor);
      u.Set("product", e.usb[k].product);
      u.Set("model", e.usb[k].model);
      usb.Set(static_cast<uint32_t>(k), u);
    }
    o.Set("usb", usb);
    o.Set("recordingExtensions", Strings(env, e.recordingExtensions));
    o.Set("recordingOption", e.recordingOption);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// cameraSourceStatus(libraries?: {[source]: library}) -> [{name, usable, detail}]: whether each compiled
// source can open here, its library (the configured one, else the default) loaded with dlopen.
Napi::Value CameraSourceStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object libraries = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  const std::vector<const CameraSourceEntry*>& rows = cameraSourceRegistry();
  Napi::Array a = Napi::Array::New(env, rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string detail;
    const bool usable = probeCameraSource(*rows[i], StringOption(libraries, rows[i]->name.c_str(), ""), &detail);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", rows[i]->name);
    o.Set("usable", usable);
    o.Set("detail", detail);
    a.Set(static_cast<uint32_t>(i), o);
  }
  return a;
}

}  // namespace

Napi::Value CameraHandle::Stop(const Napi::CallbackInfo& info) {
  auto* worker = new StopWorker(info.Env(), this, takePipeline());
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

void InitCameraBinding(Napi::Env env, Napi::Object exports) {
  AddonData& data = AddonData::Of(env);
  data.cameraConstructor = Napi::Persistent(CameraHandle::Define(env));
  data.cameras = std::make_shared<OpenCameras>();
  env.AddCleanupHook([cameras = data.cameras] { CameraHandle::StopAll(*cameras); });
  exports.Set("openCamera", Napi::Function::New(env, OpenCamera));
  exports.Set("cameraCatalog", Napi::Function::New(env, CameraCatalog));
  exports.Set("cameraSourceStatus", Napi::Function::New(env, CameraSourceStatus));
}

}  // namespace facecheck::addon
