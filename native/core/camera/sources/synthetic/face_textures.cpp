#include "core/camera/sources/synthetic/face_textures.h"

#include <algorithm>
#include <cmath>

namespace facecheck {

// The nose tip lies near the middle of the eyes, the eye line is level, the nose sits at a usual depth
// below the eyes, and each eye's aspect ratio (opening / width) is that of an open eye.
bool looksFrontalWithOpenEyes(const FaceResult& f) {
  const PointF* p = f.landmarks;
  PointF l = f.points5[0], r = f.points5[1];
  float ex = r.x - l.x, ey = r.y - l.y, iod = std::hypot(ex, ey);
  if (iod < 1) return false;
  float along = ((p[30].x - l.x) * ex + (p[30].y - l.y) * ey) / (iod * iod);
  float below = (-(p[30].x - l.x) * ey + (p[30].y - l.y) * ex) / (iod * iod);
  float roll = std::fabs(std::atan2(ey, ex)) * 57.3f;
  auto ear = [p](int a) {
    float w = std::hypot(p[a + 3].x - p[a].x, p[a + 3].y - p[a].y);
    float h = std::hypot(p[a + 1].x - p[a + 5].x, p[a + 1].y - p[a + 5].y) + std::hypot(p[a + 2].x - p[a + 4].x, p[a + 2].y - p[a + 4].y);
    return w > 0 ? h / (2 * w) : 0.0f;
  };
  return along > 0.3f && along < 0.7f && below > 0.45f && below < 0.95f && roll < 20 && ear(36) > 0.2f && ear(42) > 0.2f;
}

namespace {
// A square of 3.2 face-box sides around the face (head, hair and some background for the renderer),
// clipped to the photo; null when too little of it is left.
std::shared_ptr<FaceTexture> cropAroundFace(const PhotoView& photo, const FaceResult& f) {
  float side = f.box.size * 3.2f;
  int x0 = std::max(0, static_cast<int>(f.box.x + f.box.size / 2 - side / 2));
  int y0 = std::max(0, static_cast<int>(f.box.y + f.box.size * 0.45f - side / 2));
  int x1 = std::min(photo.width, static_cast<int>(f.box.x + f.box.size / 2 + side / 2));
  int y1 = std::min(photo.height, static_cast<int>(f.box.y + f.box.size * 0.45f + side / 2));
  if (x1 - x0 < 16 || y1 - y0 < 16) return nullptr;
  auto t = std::make_shared<FaceTexture>();
  t->width = x1 - x0;
  t->height = y1 - y0;
  t->rgb.resize(static_cast<size_t>(t->width) * t->height * 3);
  for (int y = 0; y < t->height; ++y)
    std::copy(&photo.rgb[(static_cast<size_t>(y0 + y) * photo.width + x0) * 3],
              &photo.rgb[(static_cast<size_t>(y0 + y) * photo.width + x1) * 3], &t->rgb[static_cast<size_t>(y) * t->width * 3]);
  for (int i = 0; i < 68; ++i) t->landmarks[i] = PointF{f.landmarks[i].x - x0, f.landmarks[i].y - y0};
  return t;
}
}  // namespace

void findFaceTextures(FaceEngine& engine, const PhotoView& photo, std::vector<std::shared_ptr<const FaceTexture>>* out) {
  std::vector<FaceResult> faces;
  StageTimings timings;
  // Only the landmarks and the quality measures (sunglasses) choose a texture: the eye and colour liveness
  // models would run for nothing, and each run on the camera's engine grows that model's arena for good.
  AnalyzeOptions options;
  options.embed = false;
  options.eyes = false;
  options.liveness = false;
  options.maxFaces = 16;
  if (!engine.analyze(photo.rgb, photo.bytes(), photo.width, photo.height, options, &faces, &timings).ok()) return;
  for (const FaceResult& f : faces) {
    if (!f.analyzed || f.eyeDistance < 30 || f.sunglasses > 0.5f || !looksFrontalWithOpenEyes(f)) continue;
    if (auto t = cropAroundFace(photo, f)) out->push_back(std::move(t));
  }
}

}  // namespace facecheck
