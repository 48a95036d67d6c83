#include "core/face/face_quality.h"

#include <algorithm>
#include <cmath>

#include "core/face/face_embedder.h"

namespace facecheck {

namespace {
constexpr int N = kAlignedSize;

// Regions of the aligned crop, from the 112x112 template (eyes at y~52, mouth at y~92).
struct Region {
  int x0, y0, x1, y1;
};
constexpr Region kFace{24, 36, 88, 104};        // eyes to chin, cheek to cheek
constexpr Region kLeftEye{28, 45, 49, 59};
constexpr Region kRightEye{63, 45, 84, 59};
constexpr Region kLeftCheek{26, 66, 44, 82};
constexpr Region kRightCheek{68, 66, 86, 82};
constexpr Region kNoseBridge{50, 56, 62, 72};


float distance(const PointF& a, const PointF& b) { return std::hypot(a.x - b.x, a.y - b.y); }
}  // namespace

void measureQuality(const uint8_t* aligned, FaceResult* face) {
  float grey[N * N];
  rgbToGrey(aligned, N, N, grey);
  face->brightness = static_cast<float>(meanOver(grey, N, N, kFace.x0, kFace.y0, kFace.x1, kFace.y1));

  float region[(kFace.x1 - kFace.x0) * (kFace.y1 - kFace.y0)];
  const int rw = kFace.x1 - kFace.x0, rh = kFace.y1 - kFace.y0;
  for (int y = 0; y < rh; ++y)
    std::copy(grey + (kFace.y0 + y) * N + kFace.x0, grey + (kFace.y0 + y) * N + kFace.x1, region + y * rw);
  face->sharpness = static_cast<float>(laplacianVariance(region, rw, rh));

  // Mouth: mean gap between the inner lips (points 61-63 over 67-65) over the mouth width (48-54).
  const PointF* p = face->landmarks;
  float gap = (distance(p[61], p[67]) + distance(p[62], p[66]) + distance(p[63], p[65])) / 3;
  float width = std::max(1.0f, distance(p[48], p[54]));
  face->mouthOpenness = gap / width;

  // Dark glasses hide the bright parts of the eyes (sclera, catch-lights): the 90th percentile of luma in
  // both eye regions, relative to the median luma of the cheeks and nose bridge, stays low. Measured on
  // ../shared/data: dark sunglasses 0.32-0.42, open eyes of 80 good photos 0.62-1.18 (see bench:quality).
  float eyes[2 * 21 * 14];
  int n = 0;
  for (const Region& r : {kLeftEye, kRightEye})
    for (int y = r.y0; y < r.y1; ++y)
      for (int x = r.x0; x < r.x1; ++x) eyes[n++] = grey[y * N + x];
  float skin[3 * 18 * 16];
  int m = 0;
  for (const Region& r : {kLeftCheek, kRightCheek, kNoseBridge})
    for (int y = r.y0; y < r.y1; ++y)
      for (int x = r.x0; x < r.x1; ++x) skin[m++] = grey[y * N + x];
  std::nth_element(eyes, eyes + n * 9 / 10, eyes + n);
  std::nth_element(skin, skin + m / 2, skin + m);
  double ratio = skin[m / 2] > 1 ? eyes[n * 9 / 10] / skin[m / 2] : 1;
  face->sunglasses = static_cast<float>(1.0 / (1.0 + std::exp((ratio - 0.58) * 25)));
}

}  // namespace facecheck
