// Which camera sources this build has, and opening one by name from its options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/camera/camera.h"
#include "core/camera/face_textures.h"
#include "core/camera/replay_camera.h"
#include "core/camera/synthetic_camera.h"
#include "core/error_table.h"
#include "core/face_engine.h"
#ifdef FACE_CHECK_HAVE_FREENECT
#include "core/camera/freenect_camera.h"
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
#include "core/camera/openni2_camera.h"
#endif

namespace facecheck {

struct CameraSourceOptions {
  std::string source = "synthetic";  // one of availableCameraSources()
  SyntheticOptions synthetic;
  std::vector<PhotoView> photos;  // whole photos for the synthetic camera; its faces are found here
  ReplayOptions replay;
#ifdef FACE_CHECK_HAVE_FREENECT
  FreenectOptions freenect;
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
  OpenNI2Options openni2;
#endif
  bool intrinsicsGiven = false;  // `intrinsics` overrides the source's own
  CameraIntrinsics intrinsics;
};

// Source names compiled into this build, in a fixed order.
std::vector<std::string> availableCameraSources();

// Each compiled source and whether it can be opened here: its library loads (dlopen). `detail` says
// which library was tried and why it failed.
struct CameraSourceState {
  std::string name;
  bool usable = false;
  std::string detail;
};
std::vector<CameraSourceState> cameraSourceStates();

// Makes the source `options.source` names. The synthetic camera needs `engine` (to find the faces of
// its photos) and fails when no photo has a usable face; *textures is then the number of faces found.
// The options' photos and textures are handed over (none is held here once the source exists).
Result makeCameraSource(CameraSourceOptions& options, FaceEngine* engine, std::unique_ptr<CameraSource>* out,
                        int* textures);

}  // namespace facecheck
