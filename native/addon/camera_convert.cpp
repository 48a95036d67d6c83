#include "addon/camera_convert.h"

#include <string>

#include "addon/js_convert.h"

namespace facecheck::addon {

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
  o.Set("infraredPattern", d.infraredPattern);
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
  o.Set("framesIdleSkipped", static_cast<double>(s.framesIdleSkipped));
  o.Set("idle", s.idle);
  o.Set("heapTrims", static_cast<double>(s.heapTrims));
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

Napi::Object LiveCaptureToJs(Napi::Env env, const LiveCapture& live, bool withFrame) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", static_cast<double>(live.id));
  o.Set("ageMs", (steadyMicros() - live.storedUs) / 1000.0);
  o.Set("timestampUs", static_cast<double>(live.timestampUs));
  o.Set("crop", BytesToJs(env, live.crop));
  o.Set("cropSize", live.cropSize);
  o.Set("box", BoxToJs(env, live.box));
  o.Set("landmarks", PointsToJs(env, live.landmarks, 68));
  o.Set("colour", live.colour);
  o.Set("depth", DepthToJs(env, live.depth));
  if (withFrame && live.frame) {
    Napi::Object f = Napi::Object::New(env);
    f.Set("data", BytesToJs(env, live.frame->rgb));
    f.Set("width", live.frame->width);
    f.Set("height", live.frame->height);
    o.Set("frame", f);
  }
  return o;
}

}  // namespace facecheck::addon
