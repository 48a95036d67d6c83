// The freenect source's registry row: a Kinect v1 through libfreenect (loaded at run time).
#include <dlfcn.h>

#include "core/camera/source_registry.h"
#include "core/camera/sources/freenect/freenect_camera.h"

namespace facecheck {

const CameraSourceEntry& freenectSourceEntry() {
  static const CameraSourceEntry entry = [] {
    CameraSourceEntry e;
    e.name = "freenect";
    e.summary = "Microsoft Kinect v1 (Xbox 360 and Kinect for Windows) through libfreenect";
    e.hint = "is the Kinect plugged in and powered (lsusb lists 045e:02ae), is its udev rule installed "
             "(face-check device install) and is the service user in the rule's group?";
    e.library = "libfreenect";
    e.libraryOption = "library";
    e.options = {
        {"library", OptionType::Text, "libfreenect.so.0.5", 0, 0, {}, "libfreenect to load: a name on the library path, or a path"},
        {"depth", OptionType::Choice, "auto", 0, 0, {"auto", "registered", "raw"}, "depth registered to colour by libfreenect, or raw disparity converted here"},
        {"device", OptionType::Integer, "0", 0, 16, {}, "which Kinect, by libfreenect's index"},
        {"stall_ms", OptionType::Integer, "2000", 100, 600000, {}, "no frame pair for this long: the camera counts as unplugged"},
    };
    // Microsoft's vendor id; the camera, audio and motor devices (the motor and audio are opened too).
    e.usb = {
        {"045e", "02ae", "Xbox NUI Camera (Kinect for Xbox 360)"},
        {"045e", "02ad", "Xbox NUI Audio (Kinect for Xbox 360)"},
        {"045e", "02b0", "Xbox NUI Motor (Kinect for Xbox 360)"},
        {"045e", "02bf", "camera (Kinect for Windows v1)"},
        {"045e", "02be", "audio (Kinect for Windows v1)"},
        {"045e", "02c2", "motor (Kinect for Windows v1)"},
    };
    e.probe = [](const std::string& library, std::string* detail) {
      void* h = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
      *detail = h ? library + " loads" : std::string(dlerror());
      if (h) dlclose(h);
      return h != nullptr;
    };
    e.make = [](const CameraOptionValues& o, SourceContext&, std::unique_ptr<CameraSource>* out) -> Result {
      FreenectOptions f;
      f.library = o.text("library");
      f.depthMode = o.text("depth");
      f.deviceIndex = o.integer("device");
      f.stallMs = o.integer("stall_ms");
      *out = std::make_unique<FreenectCamera>(f);
      return {};
    };
    return e;
  }();
  return entry;
}

}  // namespace facecheck
