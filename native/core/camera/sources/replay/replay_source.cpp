// The replay source's registry row: a face-check recording folder (colour, registered depth and
// intrinsics per frame) played back. Image folders are converted to such a recording by the service, and
// a file another source plays (an OpenNI2 .oni) is opened by that source instead.
#include "core/camera/source_registry.h"
#include "core/camera/sources/replay/replay_camera.h"

namespace facecheck {

const CameraSourceEntry& replaySourceEntry() {
  static const CameraSourceEntry entry = [] {
    CameraSourceEntry e;
    e.name = "replay";
    e.summary = "a recording played back (face-check recording folder, colour image folder, or a file another source plays)";
    e.hint = "does [camera.replay] path name a recording?";
    e.options = {
        {"path", OptionType::Text, "", 0, 0, {}, "recording folder, folder of colour images, or a recording file (.oni)", true},
        {"loop", OptionType::Flag, "true", 0, 0, {}, "repeat the recording at its end"},
        {"realtime", OptionType::Flag, "true", 0, 0, {}, "paced as recorded (false: every frame, as fast as analysed)"},
        {"fps", OptionType::Number, "30", 1, 120, {}, "frame rate given to a folder of images"},
    };
    e.make = [](const CameraOptionValues& o, SourceContext&, std::unique_ptr<CameraSource>* out) -> Result {
      if (o.text("path").empty()) return Result::fail(Status::FieldsValidation, "replay.path: is required");
      ReplayOptions r;
      r.path = o.text("path");
      r.loop = o.flag("loop");
      r.realtime = o.flag("realtime");
      *out = std::make_unique<ReplayCamera>(r);
      return {};
    };
    return e;
  }();
  return entry;
}

}  // namespace facecheck
