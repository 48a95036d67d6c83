// The openni2 source's registry row: any camera with an OpenNI2 driver (Orbbec through Orbbec's driver,
// Asus Xtion and PrimeSense through the PS1080 driver), or an OpenNI2 recording (.oni).
#include "core/camera/source_registry.h"
#include "core/camera/sources/openni2/openni2_api.h"
#include "core/camera/sources/openni2/openni2_camera.h"

namespace facecheck {

const CameraSourceEntry& openni2SourceEntry() {
  static const CameraSourceEntry entry = [] {
    CameraSourceEntry e;
    e.name = "openni2";
    e.summary = "Orbbec (Astra, Astra Pro/Mini, Persee, Deeyea), Asus Xtion, PrimeSense through OpenNI2; .oni recordings";
    e.hint = "is the camera plugged in, is libOpenNI2 installed (Debian: libopenni2-0) with the camera's driver in "
             "OpenNI2's Drivers folder (Orbbec: its OpenNI2 driver), and does SimpleRead (openni2-utils) see it? "
             "A driver installed while the service runs needs a restart";
    e.library = "libOpenNI2";
    e.libraryOption = "library";
    e.options = {
        {"library", OptionType::Text, "libOpenNI2.so.0", 0, 0, {}, "libOpenNI2 to load (its drivers are found beside it): a name on the library path, or a path"},
        {"uri", OptionType::Text, "", 0, 0, {}, "device URI as OpenNI2 lists it, or a .oni file (empty: the first device)"},
        {"width", OptionType::Integer, "640", 16, 8192, {}, "wanted colour and depth width (the nearest mode offered is taken)"},
        {"height", OptionType::Integer, "480", 16, 8192, {}, "wanted colour and depth height"},
        {"fps", OptionType::Integer, "30", 1, 240, {}, "wanted frame rate"},
        {"registration", OptionType::Choice, "auto", 0, 0, {"auto", "device", "converter", "none"}, "how depth is registered to colour"},
        {"stall_ms", OptionType::Integer, "2000", 100, 600000, {}, "no frame pair for this long: the camera counts as unplugged"},
        {"loop", OptionType::Flag, "false", 0, 0, {}, "a .oni recording: repeat it at its end"},
        {"record_path", OptionType::Text, "", 0, 0, {}, "record the session to this .oni file (face-check record)", true, false},
    };
    e.usb = {
        {"2bc5", "", "Orbbec (Astra, Astra Pro, Astra Mini, Persee, Deeyea, ...)"},
        {"1d27", "", "PrimeSense Carmine and Asus Xtion"},
    };
    e.recordingExtensions = {".oni"};
    e.recordingOption = "uri";
    e.probe = [](const std::string& library, std::string* detail) { return openNI2Loadable(library, detail); };
    e.make = [](const CameraOptionValues& o, SourceContext&, std::unique_ptr<CameraSource>* out) -> Result {
      OpenNI2Options n;
      n.library = o.text("library");
      n.uri = o.text("uri");
      n.width = o.integer("width");
      n.height = o.integer("height");
      n.fps = o.integer("fps");
      n.registration = o.text("registration");
      n.stallMs = o.integer("stall_ms");
      n.loop = o.flag("loop");
      n.recordPath = o.text("record_path");
      *out = std::make_unique<OpenNI2Camera>(n);
      return {};
    };
    return e;
  }();
  return entry;
}

}  // namespace facecheck
