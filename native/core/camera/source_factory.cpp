#include "core/camera/source_factory.h"

#include <dlfcn.h>

#include "core/camera/face_textures.h"

namespace facecheck {

std::vector<std::string> availableCameraSources() {
  std::vector<std::string> names = {"synthetic", "replay"};
#ifdef FACE_CHECK_HAVE_FREENECT
  names.push_back("freenect");
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
  names.push_back("openni2");
#endif
  return names;
}

std::vector<CameraSourceState> cameraSourceStates() {
  std::vector<CameraSourceState> out;
  for (const std::string& name : availableCameraSources()) {
    CameraSourceState s{name, true, "built in"};
#ifdef FACE_CHECK_HAVE_FREENECT
    if (name == "freenect") {
      const std::string lib = FreenectOptions{}.library;
      void* h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
      s.usable = h != nullptr;
      s.detail = h ? lib + " loads" : std::string(dlerror());
      if (h) dlclose(h);
    }
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
    if (name == "openni2") s.usable = openNI2Loadable(OpenNI2Options{}.library, &s.detail);
#endif
    out.push_back(std::move(s));
  }
  return out;
}

Result makeCameraSource(CameraSourceOptions& q, FaceEngine* engine, std::unique_ptr<CameraSource>* out, int* textures) {
  *textures = 0;
  if (q.source == "synthetic") {
    if (!engine) return Result::fail(Status::Internal, "the synthetic camera needs a face engine");
    for (const PhotoView& photo : q.photos) findFaceTextures(*engine, photo, &q.synthetic.faces);
    q.photos.clear();
    // The engine's pooled workspace holds image buffers sized to the largest photo; video frames are
    // smaller, so let it go and let the pipeline make one to their measure.
    engine->releaseWorkspaces();
    if (q.synthetic.faces.empty())
      return Result::fail(Status::FieldsValidation, "no usable face (frontal, eyes open, >= 30 px between the eyes) in the synthetic camera's photos");
    *textures = static_cast<int>(q.synthetic.faces.size());
    if (q.intrinsicsGiven) q.synthetic.intrinsics = q.intrinsics;
    // Moved, so that the camera holds the only reference to each texture and frees it once prepared.
    *out = std::make_unique<SyntheticCamera>(std::move(q.synthetic));
    return {};
  }
  if (q.source == "replay") {
    *out = std::make_unique<ReplayCamera>(q.replay);
    return {};
  }
#ifdef FACE_CHECK_HAVE_FREENECT
  if (q.source == "freenect") {
    if (q.intrinsicsGiven) {
      q.freenect.intrinsics = q.intrinsics;
      q.freenect.intrinsicsGiven = true;
    }
    *out = std::make_unique<FreenectCamera>(q.freenect);
    return {};
  }
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
  if (q.source == "openni2") {
    if (q.intrinsicsGiven) {
      q.openni2.intrinsics = q.intrinsics;
      q.openni2.intrinsicsGiven = true;
    }
    *out = std::make_unique<OpenNI2Camera>(q.openni2);
    return {};
  }
#endif
  return Result::fail(Status::FieldsValidation, "camera source \"" + q.source + "\" is not available in this build");
}

}  // namespace facecheck
