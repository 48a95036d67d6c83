// The camera sources this build has: the one list. Each source describes itself (its options, the USB
// devices it drives, the recordings it plays, the run-time library it needs) and makes its CameraSource
// from checked option values. The ini's [camera.<source>] sections, `device install`'s udev rules and the
// docs all read this description through the addon, so adding a camera is one folder under sources/ and
// one row in source_registry.cpp (and its headers' entry in native/sources.json).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/camera/camera.h"
#include "core/camera/source_options.h"
#include "core/status.h"
#include "core/face/face_engine.h"
#include "core/camera/sources/synthetic/face_textures.h"

namespace facecheck {

// A USB device a source drives: `product` empty means every product of the vendor (ids in lower-case hex).
struct UsbDeviceId {
  std::string vendor;
  std::string product;
  std::string model;
};

// What the caller provides besides a source's own options.
struct SourceContext {
  FaceEngine* engine = nullptr;         // the synthetic source finds the faces of its photos with it
  std::vector<PhotoView>* photos = nullptr;  // the synthetic source's photos (handed over, then cleared)
  bool intrinsicsGiven = false;         // [camera] fx/fy/cx/cy (for a source that renders through them)
  CameraIntrinsics intrinsics;
  int textures = 0;                     // out: faces the synthetic source found
};

struct CameraSourceEntry {
  std::string name;
  std::string summary;                  // one line: what it reads
  std::string hint;                     // what to check when it does not connect (the start-up warning)
  std::string library;                  // the run-time library it loads (dlopen); empty: built in
  std::string libraryOption;            // the option naming that library (probed with its default)
  std::vector<CameraOptionSpec> options;
  std::vector<UsbDeviceId> usb;
  // Recordings this source plays: a replay of a file with one of these extensions opens this source with
  // `recordingOption` set to the file.
  std::vector<std::string> recordingExtensions;
  std::string recordingOption;
  // Whether the source can open here (its library loads), with what was tried; built-in sources can.
  std::function<bool(const std::string& library, std::string* detail)> probe;
  std::function<Result(const CameraOptionValues& options, SourceContext& context, std::unique_ptr<CameraSource>* out)> make;
  // True when the source takes [camera] fx/fy/cx/cy itself (the synthetic camera renders through them);
  // any other source reports its own intrinsics and makeCameraSource puts the given ones on its frames.
  bool rendersIntrinsics = false;
};

// Every source compiled into this build, in a fixed order.
const std::vector<const CameraSourceEntry*>& cameraSourceRegistry();
const CameraSourceEntry* findCameraSource(const std::string& name);

// A source chosen by name with its options as text (key -> value), as the addon receives them.
struct CameraSourceOptions {
  std::string source = "synthetic";
  std::map<std::string, std::string> options;         // from the ini's [camera.<source>]
  std::map<std::string, std::string> programOptions;  // set by the program (face-check record's)
  std::vector<PhotoView> photos;        // whole photos for the synthetic source
  bool intrinsicsGiven = false;
  CameraIntrinsics intrinsics;
};

// Checks the options against the source's description and makes it. *textures: faces the synthetic
// source found. The options' photos are handed over (none is held here once the source exists).
Result makeCameraSource(CameraSourceOptions& options, FaceEngine* engine, std::unique_ptr<CameraSource>* out,
                        int* textures);

// Whether the source can open here: the library named by `library` (empty: the option's default) loads.
bool probeCameraSource(const CameraSourceEntry& source, const std::string& library, std::string* detail);

}  // namespace facecheck
