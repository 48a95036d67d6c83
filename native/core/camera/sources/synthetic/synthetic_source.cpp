// The synthetic source's registry row: rendered heads and attacks (trials without a camera, tests and the
// liveness benchmark). Its photos are decoded by the service and handed over in SourceContext.
#include "core/camera/source_registry.h"
#include "core/camera/sources/synthetic/face_textures.h"
#include "core/camera/sources/synthetic/synthetic_camera.h"

namespace facecheck {

const CameraSourceEntry& syntheticSourceEntry() {
  static const CameraSourceEntry entry = [] {
    CameraSourceEntry e;
    e.name = "synthetic";
    e.summary = "rendered live faces and attacks from face photos (a trial without a camera, tests)";
    e.options = {
        {"scenario", OptionType::Text, "", 0, 0, {}, "presentations: kind[:seconds][xN], ... (empty: live forever)"},
        {"loop", OptionType::Flag, "true", 0, 0, {}, "repeat the scenario at its end"},
        {"seed", OptionType::Integer, "1", 0, 9007199254740991.0, {}, "seed of the rendered presentations"},
        {"fps", OptionType::Number, "30", 1, 120, {}, "frames a second"},
        {"realtime", OptionType::Flag, "true", 0, 0, {}, "paced in real time (false: every frame, as fast as analysed)"},
        {"infrared", OptionType::Flag, "false", 0, 0, {}, "also render the projector-lit infrared image a stereo camera (RealSense) gives"},
        {"photos", OptionType::Text, "", 0, 0, {}, "face photos, files or folders, comma separated (empty: the npm demo photos)", true},
    };
    e.rendersIntrinsics = true;
    e.make = [](const CameraOptionValues& o, SourceContext& c, std::unique_ptr<CameraSource>* out) -> Result {
      SyntheticOptions s;
      Result r = parseScenario(o.text("scenario"), &s.scenario);
      if (!r.ok()) return Result::fail(Status::FieldsValidation, "synthetic.scenario: " + r.detail);
      s.loop = o.flag("loop");
      s.seed = static_cast<uint64_t>(o.number("seed"));
      s.fps = o.number("fps");
      s.realtime = o.flag("realtime");
      s.infrared = o.flag("infrared");
      if (!c.engine) return Result::fail(Status::Internal, "the synthetic camera needs a face engine");
      if (c.photos) {
        for (const PhotoView& photo : *c.photos) findFaceTextures(*c.engine, photo, &s.faces);
        c.photos->clear();
      }
      // The engine's pooled workspace holds image buffers sized to the largest photo; video frames are
      // smaller, so let it go and let the pipeline make one to their measure.
      c.engine->releaseWorkspaces();
      if (s.faces.empty())
        return Result::fail(Status::FieldsValidation, "no usable face (frontal, eyes open, >= 30 px between the eyes) in the synthetic camera's photos");
      c.textures = static_cast<int>(s.faces.size());
      if (c.intrinsicsGiven) s.intrinsics = c.intrinsics;
      // Moved, so that the camera holds the only reference to each texture and frees it once prepared.
      *out = std::make_unique<SyntheticCamera>(std::move(s));
      return {};
    };
    return e;
  }();
  return entry;
}

}  // namespace facecheck
