#include "addon/camera_options.h"

#include <algorithm>
#include <map>

#include "addon/js_options.h"

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
  c.minInfraredPattern = FloatOption(o, "minInfraredPattern", c.minInfraredPattern);
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

// A source's options as text, the way the registry checks them: strings as given, numbers in their
// shortest spelling, booleans as true/false.
Result ReadTextMap(const Napi::Object& o, const char* what, std::map<std::string, std::string>* out) {
  Napi::Array keys = o.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    std::string key = keys.Get(i).ToString().Utf8Value();
    Napi::Value v = o.Get(key);
    if (v.IsString() || v.IsNumber() || v.IsBoolean()) (*out)[key] = v.ToString().Utf8Value();
    else if (!v.IsUndefined()) return Result::fail(Status::FieldsValidation, std::string(what) + "." + key + " must be text, a number or a boolean");
  }
  return {};
}

}  // namespace

Result ReadOpenRequest(const Napi::Object& o, OpenRequest* q) {
  q->camera.source = StringOption(o, "source", "synthetic");
  Result r;
  q->engine.modelDir = StringOption(o, "modelDir", "");
  q->ortLibrary = StringOption(o, "ortLibrary", "");
  q->engine.threads = 1;
  Napi::Value score = o.Get("minDetectionScore");
  if (score.IsNumber()) q->engine.minDetectionScore = score.As<Napi::Number>().FloatValue();

  Napi::Object intr = ObjectOption(o, "intrinsics");
  if (intr.Get("fx").IsNumber()) {
    q->camera.intrinsicsGiven = true;
    q->camera.intrinsics.fx = NumberOption(intr, "fx", 525);
    q->camera.intrinsics.fy = NumberOption(intr, "fy", q->camera.intrinsics.fx);
    q->camera.intrinsics.cx = NumberOption(intr, "cx", 319.5);
    q->camera.intrinsics.cy = NumberOption(intr, "cy", 239.5);
  }
  r = ReadTextMap(ObjectOption(o, "sourceOptions"), "sourceOptions", &q->camera.options);
  if (!r.ok()) return r;
  r = ReadTextMap(ObjectOption(o, "programOptions"), "programOptions", &q->camera.programOptions);
  if (!r.ok()) return r;
  Napi::Value photos = o.Get("photos");
  if (photos.IsArray()) {
    Napi::Array a = photos.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) {
      Napi::Value pv = a.Get(i);
      if (!pv.IsObject()) continue;
      Napi::Object p = pv.As<Napi::Object>();
      Napi::Value data = p.Get("data");
      int w = IntOption(p, "width", 0), h = IntOption(p, "height", 0);
      if (!data.IsTypedArray() || data.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || w < 1 || h < 1)
        return Result::fail(Status::FieldsValidation, "photos[] must be {data: Uint8Array, width, height}");
      Napi::Uint8Array u = data.As<Napi::Uint8Array>();
      if (u.ByteLength() != static_cast<size_t>(w) * h * 3)
        return Result::fail(Status::FieldsValidation, "photos[] data must hold width*height RGB pixels");
      // Read in place by the open worker (the caller must not change the array until the camera is open):
      // a native copy of every photo would double the start's peak memory.
      q->camera.photos.push_back(PhotoView{u.Data(), w, h});
      q->photoArrays.push_back(Napi::Persistent(u));
    }
  }
  PipelineConfig& pc = q->pipeline;
  pc.liveness = ReadLiveness(ObjectOption(o, "liveness"));
  pc.workers = std::max(1, std::min(8, IntOption(o, "workers", 1)));
  pc.process = BoolOption(o, "process", true);
  pc.reconnectMs = IntOption(o, "reconnectMs", pc.reconnectMs);
  pc.cropSize = std::max(16, std::min(1024, IntOption(o, "cropSize", pc.cropSize)));
  pc.cropGrow = FloatOption(o, "cropGrow", pc.cropGrow);
  pc.maxFrames = static_cast<uint64_t>(NumberOption(o, "maxFrames", 0));
  pc.idleDetectFps = std::max(0.0, NumberOption(o, "idleDetectFps", pc.idleDetectFps));
  pc.idleAfterMs = std::max(0, IntOption(o, "idleAfterMs", pc.idleAfterMs));
  pc.idleTrimMs = std::max(0, IntOption(o, "idleTrimMs", pc.idleTrimMs));
  Napi::Object rec = ObjectOption(o, "record");
  pc.recordDir = StringOption(rec, "dir", "");
  std::string fmt = StringOption(rec, "format", "face-check");
  if (fmt != "face-check" && fmt != "fakenect")
    return Result::fail(Status::FieldsValidation, "record.format must be face-check or fakenect");
  pc.recordFormat = fmt == "fakenect" ? RecordingFormat::Fakenect : RecordingFormat::FaceCheck;
  pc.recordFrames = static_cast<uint64_t>(NumberOption(rec, "frames", 0));
  pc.stopAfterRecording = BoolOption(rec, "stopAfter", false);
  std::string reports = StringOption(o, "reports", "all");
  q->reportFrames = reports == "all";
  q->queueSize = std::max(1, std::min(1024, IntOption(o, "queueSize", 16)));
  if (q->needsEngine() && (q->engine.modelDir.empty() || q->ortLibrary.empty()))
    return Result::fail(Status::FieldsValidation, "modelDir and ortLibrary are required");
  return {};
}

}  // namespace facecheck::addon
