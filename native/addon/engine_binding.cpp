// JS binding of the face engine. Every heavy call (loading models, analysing an image) runs in a
// Napi::AsyncWorker on the libuv pool; the event loop only converts arguments and results.
#include <napi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addon/addon_data.h"
#include "addon/bindings.h"
#include "addon/js_convert.h"
#include "addon/js_errors.h"
#include "addon/js_options.h"
#include "core/face/face_engine.h"
#include "core/ort/ort_api.h"

namespace facecheck::addon {

namespace {

class EngineHandle : public Napi::ObjectWrap<EngineHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FaceEngineHandle",
                       {InstanceMethod("analyze", &EngineHandle::Analyze), InstanceMethod("close", &EngineHandle::Close),
                        InstanceAccessor("pending", &EngineHandle::Pending, nullptr)});
  }
  explicit EngineHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineHandle>(info) {}

  void adopt(std::shared_ptr<FaceEngine> engine) { engine_ = std::move(engine); }

 private:
  Napi::Value Analyze(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Pending(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), pending_); }

  std::shared_ptr<FaceEngine> engine_;  // shared with running workers, so a worker never outlives it
  int pending_ = 0;                     // queued or running analyses (JS thread only)
  friend class AnalyzeWorker;
};

// Analyses run at the process's own scheduling priority, never lowered per thread: a lowered analysis thread
// (and the image decodes libuv later runs on that thread) gets a tenth of a core or less beside any other
// busy process on the board, a kiosk's UI included, and the service falls far below its fair share. The
// process's niceness (the systemd unit's Nice=) is the one knob that ranks the service against the rest.

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, EngineConfig config, std::string ortLibrary)
      : Napi::AsyncWorker(env, "face-check:load"), deferred_(Napi::Promise::Deferred::New(env)),
        config_(std::move(config)), ortLibrary_(std::move(ortLibrary)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    std::string error;
    if (!loadOrtApi(ortLibrary_, &error)) {
      result_ = Result::fail(Status::Internal, error);
      return;
    }
    result_ = FaceEngine::load(config_, &engine_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!result_.ok()) {
      deferred_.Reject(MakeError(env, result_).Value());
      return;
    }
    Napi::Object handle = AddonData::Of(env).engineConstructor.New({});
    EngineHandle::Unwrap(handle)->adopt(std::shared_ptr<FaceEngine>(std::move(engine_)));
    deferred_.Resolve(handle);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  EngineConfig config_;
  std::string ortLibrary_;
  Result result_;
  std::unique_ptr<FaceEngine> engine_;
};

Napi::Object FaceToJs(Napi::Env env, const FaceResult& f) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("box", BoxToJs(env, f.box));
  o.Set("landmarks", PointsToJs(env, f.landmarks, 68));
  o.Set("points5", PointsToJs(env, f.points5, 5));
  o.Set("analyzed", f.analyzed);
  o.Set("yaw", f.yaw);
  o.Set("pitch", f.pitch);
  o.Set("roll", f.roll);
  o.Set("eyeLeft", f.eyeLeft);
  o.Set("eyeRight", f.eyeRight);
  o.Set("mouthOpenness", f.mouthOpenness);
  o.Set("sunglasses", f.sunglasses);
  o.Set("brightness", f.brightness);
  o.Set("sharpness", f.sharpness);
  o.Set("eyeDistance", f.eyeDistance);
  o.Set("liveness", f.liveness);
  o.Set("embedding", FloatsToJs(env, f.embedding.data(), f.embedding.size()));
  if (!f.alignedCrop.empty()) o.Set("alignedCrop", BytesToJs(env, f.alignedCrop));
  return o;
}

class AnalyzeWorker : public Napi::AsyncWorker {
 public:
  AnalyzeWorker(Napi::Env env, EngineHandle* handle, Napi::Uint8Array pixels, int width, int height,
                AnalyzeOptions options)
      : Napi::AsyncWorker(env, "face-check:analyze"), deferred_(Napi::Promise::Deferred::New(env)),
        handle_(handle), engine_(handle->engine_), data_(pixels.Data()), bytes_(pixels.ByteLength()),
        width_(width), height_(height), options_(options) {
    // Keeps the pixels and the handle alive while the worker reads them.
    pixels_ = Napi::Persistent(pixels);
    handle->Ref();
    ++handle->pending_;
  }
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    result_ = engine_->analyze(data_, bytes_, width_, height_, options_, &faces_, &timings_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    finish();
    if (!result_.ok()) {
      deferred_.Reject(MakeError(env, result_).Value());
      return;
    }
    Napi::Array faces = Napi::Array::New(env, faces_.size());
    for (size_t i = 0; i < faces_.size(); ++i) faces.Set(i, FaceToJs(env, faces_[i]));
    Napi::Object timings = Napi::Object::New(env);
    timings.Set("detect", timings_.detect);
    timings.Set("landmarks", timings_.landmarks);
    timings.Set("eyes", timings_.eyes);
    timings.Set("liveness", timings_.liveness);
    timings.Set("quality", timings_.quality);
    timings.Set("embed", timings_.embed);
    timings.Set("total", timings_.total);
    const StageRuns& r = timings_.runs;
    Napi::Object runs = Napi::Object::New(env);
    runs.Set("detect", r.detect);
    runs.Set("landmarks", r.landmarks);
    runs.Set("eyes", r.eyes);
    runs.Set("liveness", r.liveness);
    runs.Set("quality", r.quality);
    runs.Set("embed", r.embed);
    timings.Set("runs", runs);
    Napi::Object out = Napi::Object::New(env);
    out.Set("faces", faces);
    out.Set("timings", timings);
    deferred_.Resolve(out);
  }
  void OnError(const Napi::Error& e) override {
    finish();
    deferred_.Reject(e.Value());
  }

 private:
  void finish() {
    --handle_->pending_;
    handle_->Unref();
  }
  Napi::Promise::Deferred deferred_;
  EngineHandle* handle_;
  std::shared_ptr<FaceEngine> engine_;
  Napi::Reference<Napi::Uint8Array> pixels_;
  const uint8_t* data_;
  size_t bytes_;
  int width_, height_;
  AnalyzeOptions options_;
  Result result_;
  std::vector<FaceResult> faces_;
  StageTimings timings_;
};

Napi::Value EngineHandle::Analyze(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return RejectWith(env, Status::ServiceUnavailable, "engine is closed");
  if (info.Length() < 3 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || !info[1].IsNumber() ||
      !info[2].IsNumber())
    return RejectWith(env, Status::FieldsValidation, "analyze(pixels: Uint8Array, width, height, options?)");
  AnalyzeOptions options;
  if (info.Length() > 3 && info[3].IsObject()) {
    Napi::Object o = info[3].As<Napi::Object>();
    options.embed = BoolOption(o, "embed", options.embed);
    options.crop = BoolOption(o, "crop", options.crop);
    options.eyes = BoolOption(o, "eyes", options.eyes);
    options.liveness = BoolOption(o, "liveness", options.liveness);
    options.quality = BoolOption(o, "quality", options.quality);
    options.otherFaceLandmarks = BoolOption(o, "otherFaceLandmarks", options.otherFaceLandmarks);
    options.maxFaces = IntOption(o, "maxFaces", options.maxFaces);
  }
  double w = info[1].As<Napi::Number>().DoubleValue(), h = info[2].As<Napi::Number>().DoubleValue();
  if (!(w >= 1 && h >= 1 && w <= 1 << 20 && h <= 1 << 20) || w != static_cast<int>(w) || h != static_cast<int>(h))
    return RejectWith(env, Status::FieldsValidation, "width and height must be positive integers");
  auto* worker = new AnalyzeWorker(env, this, info[0].As<Napi::Uint8Array>(), static_cast<int>(w),
                                   static_cast<int>(h), options);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

Napi::Value EngineHandle::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (pending_ > 0) return RejectWith(env, Status::ServiceUnavailable, "engine is busy: analyses are still running");
  engine_.reset();  // sessions are released here, on the JS thread, when no worker holds them
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Resolve(env.Undefined());
  return deferred.Promise();
}

// The template's networks (src/engine/template-spec.ts builds and checks them from models/manifest.json):
// this only converts, refusing what is not of the expected shape. Returns the problem, or "".
static std::string TemplateNetworks(const Napi::Array& list, std::vector<EmbeddingNetwork>* out) {
  for (uint32_t i = 0; i < list.Length(); ++i) {
    const std::string at = "network " + std::to_string(i) + ": ";
    if (!list.Get(i).IsObject()) return at + "must be an object";
    Napi::Object n = list.Get(i).As<Napi::Object>();
    EmbeddingNetwork net;
    for (auto [key, into] : {std::pair<const char*, std::string*>{"file", &net.file}, {"input", &net.input}, {"output", &net.output}}) {
      if (!n.Get(key).IsString()) return at + key + " must be a string";
      *into = n.Get(key).As<Napi::String>().Utf8Value();
    }
    for (auto [key, into] : {std::pair<const char*, int*>{"width", &net.width}, {"height", &net.height}, {"outputSize", &net.outputSize}}) {
      if (!n.Get(key).IsNumber()) return at + key + " must be a number";
      *into = n.Get(key).As<Napi::Number>().Int32Value();
    }
    if (!n.Get("weight").IsNumber()) return at + "weight must be a number";
    net.weight = n.Get("weight").As<Napi::Number>().FloatValue();
    const std::string channels = n.Get("channels").IsString() ? n.Get("channels").As<Napi::String>().Utf8Value() : "";
    if (channels != "RGB" && channels != "BGR") return at + "channels must be RGB or BGR";
    net.norm.order = channels == "RGB" ? ChannelOrder::RGB : ChannelOrder::BGR;
    for (auto [key, into] : {std::pair<const char*, float*>{"mean", net.norm.mean}, {"std", net.norm.std}}) {
      Napi::Value v = n.Get(key);
      if (!v.IsArray() || v.As<Napi::Array>().Length() != 3) return at + key + " must be 3 numbers";
      for (uint32_t c = 0; c < 3; ++c) {
        Napi::Value x = v.As<Napi::Array>().Get(c);
        if (!x.IsNumber()) return at + key + " must be 3 numbers";
        into[c] = x.As<Napi::Number>().FloatValue();
      }
    }
    out->push_back(std::move(net));
  }
  return "";
}

Napi::Value CreateEngine(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) return RejectWith(env, Status::FieldsValidation, "options required");
  Napi::Object o = info[0].As<Napi::Object>();
  if (!o.Get("modelDir").IsString() || !o.Get("ortLibrary").IsString())
    return RejectWith(env, Status::FieldsValidation, "modelDir and ortLibrary are required strings");
  EngineConfig config;
  config.modelDir = o.Get("modelDir").As<Napi::String>().Utf8Value();
  config.threads = std::max(1, IntOption(o, "threads", config.threads));
  config.flipAverage = BoolOption(o, "flipAverage", config.flipAverage);
  Napi::Value networks = o.Get("templateNetworks");
  if (networks.IsArray()) {
    std::string problem = TemplateNetworks(networks.As<Napi::Array>(), &config.templateNetworks);
    if (!problem.empty()) return RejectWith(env, Status::FieldsValidation, "templateNetworks: " + problem);
  }
  Napi::Value score = o.Get("minDetectionScore");
  if (score.IsNumber()) config.minDetectionScore = score.As<Napi::Number>().FloatValue();
  Napi::Value maxPixels = o.Get("maxPixels");
  if (maxPixels.IsNumber()) config.maxPixels = maxPixels.As<Napi::Number>().Int64Value();
  auto* worker = new LoadWorker(env, config, o.Get("ortLibrary").As<Napi::String>().Utf8Value());
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace

void InitEngineBinding(Napi::Env env, Napi::Object exports) {
  AddonData::Of(env).engineConstructor = Napi::Persistent(EngineHandle::Define(env));
  exports.Set("createEngine", Napi::Function::New(env, CreateEngine));
}

}  // namespace facecheck::addon
