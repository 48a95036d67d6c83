// The realsense source's registry row: Intel RealSense depth cameras through librealsense2, or a RealSense
// recording (.bag).
#include "core/camera/source_registry.h"
#include "core/camera/sources/realsense/realsense_api.h"
#include "core/camera/sources/realsense/realsense_camera.h"

namespace facecheck {

const CameraSourceEntry& realsenseSourceEntry() {
  static const CameraSourceEntry entry = [] {
    CameraSourceEntry e;
    e.name = "realsense";
    e.summary = "Intel RealSense D415, D435, D435i, D455, D405 and other D400 cameras through librealsense2; .bag recordings";
    e.hint = "is the camera on a USB 3 port, is librealsense2 installed (Intel's packages or a source build; "
             "docs/device.md) and does rs-enumerate-devices see it? Is the udev rule installed (device install "
             "writes it) and the camera re-plugged since?";
    e.library = "librealsense2";
    e.libraryOption = "library";
    e.options = {
        {"library", OptionType::Text, "auto", 0, 0, {}, "librealsense2 to load: auto (the system's, newest version first), a name on the library path, or a path"},
        {"serial", OptionType::Text, "", 0, 0, {}, "serial number of the camera to open (empty: the first one)"},
        {"bag", OptionType::Text, "", 0, 0, {}, "a RealSense recording (.bag) to play instead of a camera", true},
        {"width", OptionType::Integer, "640", 16, 8192, {}, "wanted colour and depth width (the nearest mode offered is taken)"},
        {"height", OptionType::Integer, "480", 16, 8192, {}, "wanted colour and depth height"},
        {"fps", OptionType::Integer, "30", 1, 300, {}, "wanted frame rate"},
        {"infrared", OptionType::Flag, "true", 0, 0, {}, "read the left infrared image too (the projector-lit image: a liveness cue against screens)"},
        {"emitter", OptionType::Choice, "on", 0, 0, {"on", "off", "device"}, "the IR projector: on (depth on smooth skin needs its pattern), off, or as the camera has it"},
        {"stall_ms", OptionType::Integer, "2000", 100, 600000, {}, "no frame set for this long: the camera counts as unplugged"},
        {"loop", OptionType::Flag, "false", 0, 0, {}, "a .bag recording: repeat it at its end"},
        {"realtime", OptionType::Flag, "true", 0, 0, {}, "a .bag recording: play at its recorded pace (false: every frame, as fast as it is analysed)"},
        {"record_path", OptionType::Text, "", 0, 0, {}, "record the session to this .bag file (face-check record)", true, false},
    };
    // Intel's vendor id covers every Intel USB device: only RealSense products are listed.
    const char* d400 = "Intel RealSense D400 series";
    e.usb = {
        {"8086", "0ad1", "Intel RealSense D400"}, {"8086", "0ad2", "Intel RealSense D410"},
        {"8086", "0ad3", "Intel RealSense D415"}, {"8086", "0ad4", "Intel RealSense D430"},
        {"8086", "0ad5", "Intel RealSense D430 (IMU)"}, {"8086", "0ad6", d400},
        {"8086", "0af2", d400}, {"8086", "0af6", "Intel RealSense D420"}, {"8086", "0afe", d400},
        {"8086", "0aff", d400}, {"8086", "0b00", d400}, {"8086", "0b01", d400}, {"8086", "0b03", "Intel RealSense D460"},
        {"8086", "0b07", "Intel RealSense D435"}, {"8086", "0b0c", d400}, {"8086", "0b0d", d400},
        {"8086", "0b3a", "Intel RealSense D435i"}, {"8086", "0b3d", d400}, {"8086", "0b48", "Intel RealSense SR305"},
        {"8086", "0b49", d400}, {"8086", "0b4b", d400}, {"8086", "0b4d", d400}, {"8086", "0b52", d400},
        {"8086", "0b56", d400}, {"8086", "0b5b", "Intel RealSense D405"}, {"8086", "0b5c", "Intel RealSense D455"},
        {"8086", "0b64", "Intel RealSense L515"}, {"8086", "0b68", d400}, {"8086", "0b6a", d400},
        {"8086", "0b6b", d400}, {"8086", "0aa5", "Intel RealSense SR300"},
    };
    e.recordingExtensions = {".bag"};
    e.recordingOption = "bag";
    e.probe = [](const std::string& library, std::string* detail) { return realSenseLoadable(library, detail); };
    e.make = [](const CameraOptionValues& o, SourceContext&, std::unique_ptr<CameraSource>* out) -> Result {
      RealSenseOptions n;
      n.library = o.text("library");
      n.serial = o.text("serial");
      n.bag = o.text("bag");
      n.width = o.integer("width");
      n.height = o.integer("height");
      n.fps = o.integer("fps");
      n.infrared = o.flag("infrared");
      n.emitter = o.text("emitter");
      n.stallMs = o.integer("stall_ms");
      n.loop = o.flag("loop");
      n.realtime = o.flag("realtime");
      n.recordPath = o.text("record_path");
      *out = std::make_unique<RealSenseCamera>(n);
      return {};
    };
    return e;
  }();
  return entry;
}

}  // namespace facecheck
