#include "core/face/landmark_pose.h"

#include <algorithm>
#include <cmath>

namespace facecheck {

namespace {
constexpr double kDeg = 180.0 / M_PI;
// In a level frontal face the nose tip sits this far from the eye line towards the mouth line
// (median over the good photos of ../shared/data/identities).
constexpr double kNoseDepth = 0.55;

PointF mid(const PointF& a, const PointF& b) { return PointF{(a.x + b.x) / 2, (a.y + b.y) / 2}; }
double clampUnit(double v) { return std::max(-1.0, std::min(1.0, v)); }
}  // namespace

void estimatePose(FaceResult* face) {
  const PointF* p = face->landmarks;
  PointF leftEye = mid(p[36], p[39]), rightEye = mid(p[42], p[45]);
  double roll = std::atan2(rightEye.y - leftEye.y, rightEye.x - leftEye.x);
  // Undo the roll, then read offsets in the face's own frame.
  double c = std::cos(-roll), s = std::sin(-roll);
  auto rotX = [&](const PointF& q) { return q.x * c - q.y * s; };
  auto rotY = [&](const PointF& q) { return q.x * s + q.y * c; };
  // Yaw: the nose tip's position between the two sides of the face contour (-1 .. 1) is sin(yaw).
  double jawL = rotX(p[2]), jawR = rotX(p[14]), nose = rotX(p[30]);
  double across = 2 * (nose - jawL) / std::max(1e-6, jawR - jawL) - 1;
  // Pitch: the nose tip's height between the eye line and the mouth line, against a level face.
  double eyes = rotY(mid(leftEye, rightEye)), mouth = rotY(mid(p[48], p[54])), noseY = rotY(p[30]);
  double down = (noseY - eyes) / std::max(1e-6, mouth - eyes);
  face->yaw = static_cast<float>(-std::asin(clampUnit(across)) * kDeg);
  face->pitch = static_cast<float>(std::asin(clampUnit((kNoseDepth - down) * 2)) * kDeg);
  face->roll = static_cast<float>(roll * kDeg);
}

}  // namespace facecheck
