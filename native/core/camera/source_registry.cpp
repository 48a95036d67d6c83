#include "core/camera/source_registry.h"

namespace facecheck {

namespace {

// A source whose frames carry [camera] fx/fy/cx/cy instead of the intrinsics it reports (a camera whose
// calibration the operator measured himself).
class GivenIntrinsics : public CameraSource {
 public:
  GivenIntrinsics(std::unique_ptr<CameraSource> source, CameraIntrinsics intrinsics)
      : source_(std::move(source)), intrinsics_(intrinsics) {}
  const char* name() const override { return source_->name(); }
  Result open() override { return source_->open(); }
  Result read(CameraFrame* frame) override {
    Result r = source_->read(frame);
    if (r.ok()) frame->intrinsics = intrinsics_;
    return r;
  }
  void close() override { source_->close(); }
  void interrupt() override { source_->interrupt(); }
  bool lossless() const override { return source_->lossless(); }
  bool ended() const override { return source_->ended(); }

 private:
  std::unique_ptr<CameraSource> source_;
  CameraIntrinsics intrinsics_;
};

}  // namespace

// Each source's description, defined in its folder under sources/.
const CameraSourceEntry& syntheticSourceEntry();
const CameraSourceEntry& replaySourceEntry();
#ifdef FACE_CHECK_HAVE_FREENECT
const CameraSourceEntry& freenectSourceEntry();
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
const CameraSourceEntry& openni2SourceEntry();
#endif
#ifdef FACE_CHECK_HAVE_REALSENSE
const CameraSourceEntry& realsenseSourceEntry();
#endif

const std::vector<const CameraSourceEntry*>& cameraSourceRegistry() {
  // One row per source; a source whose headers were not found at build time is not compiled in.
  static const std::vector<const CameraSourceEntry*> rows = {
      &syntheticSourceEntry(),
      &replaySourceEntry(),
#ifdef FACE_CHECK_HAVE_FREENECT
      &freenectSourceEntry(),
#endif
#ifdef FACE_CHECK_HAVE_OPENNI2
      &openni2SourceEntry(),
#endif
#ifdef FACE_CHECK_HAVE_REALSENSE
      &realsenseSourceEntry(),
#endif
  };
  return rows;
}

const CameraSourceEntry* findCameraSource(const std::string& name) {
  for (const CameraSourceEntry* e : cameraSourceRegistry())
    if (e->name == name) return e;
  return nullptr;
}

bool probeCameraSource(const CameraSourceEntry& source, const std::string& library, std::string* detail) {
  if (!source.probe) {
    *detail = "built in";
    return true;
  }
  std::string lib = library;
  if (lib.empty())
    for (const CameraOptionSpec& s : source.options)
      if (s.key == source.libraryOption) lib = s.defaultValue;
  return source.probe(lib, detail);
}

Result makeCameraSource(CameraSourceOptions& q, FaceEngine* engine, std::unique_ptr<CameraSource>* out, int* textures) {
  *textures = 0;
  const CameraSourceEntry* entry = findCameraSource(q.source);
  if (!entry) return Result::fail(Status::FieldsValidation, "camera source \"" + q.source + "\" is not available in this build");
  CameraOptionValues values;
  Result r = checkCameraOptions(q.source, entry->options, q.options, q.programOptions, &values);
  if (!r.ok()) return r;
  SourceContext context;
  context.engine = engine;
  context.photos = &q.photos;
  context.intrinsicsGiven = q.intrinsicsGiven;
  context.intrinsics = q.intrinsics;
  r = entry->make(values, context, out);
  *textures = context.textures;
  if (r.ok() && q.intrinsicsGiven && !entry->rendersIntrinsics) *out = std::make_unique<GivenIntrinsics>(std::move(*out), q.intrinsics);
  return r;
}

}  // namespace facecheck
