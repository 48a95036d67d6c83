#include "core/camera/liveness.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace facecheck {

namespace {
constexpr double kRadToDeg = 57.29577951308232;

struct Sample {
  float u, v;       // pixel
  double X, Y, Z;   // camera coordinates, mm
};

bool insidePolygon(const std::vector<PointF>& poly, float x, float y) {
  bool in = false;
  for (size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++) {
    if ((poly[i].y > y) != (poly[j].y > y) &&
        x < (poly[j].x - poly[i].x) * (y - poly[i].y) / (poly[j].y - poly[i].y) + poly[i].x)
      in = !in;
  }
  return in;
}

float median(std::vector<float>& v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  return v[mid];
}

// Solves the n x n system A x = b (row-major, n <= 6) by Gaussian elimination with partial pivoting.
bool solve(double* A, double* b, int n) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(A[r * n + c]) > std::fabs(A[p * n + c])) p = r;
    if (std::fabs(A[p * n + c]) < 1e-12) return false;
    if (p != c) {
      for (int k = 0; k < n; ++k) std::swap(A[c * n + k], A[p * n + k]);
      std::swap(b[c], b[p]);
    }
    for (int r = c + 1; r < n; ++r) {
      double f = A[r * n + c] / A[c * n + c];
      for (int k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (int c = n - 1; c >= 0; --c) {
    for (int k = c + 1; k < n; ++k) b[c] -= A[c * n + k] * b[k];
    b[c] /= A[c * n + c];
  }
  return true;
}

// Least squares Z = sum_i coef_i * basis_i(x, y) over points; basis of the plane (3) or the quadric (6).
template <int N>
bool fitSurface(const std::vector<Sample>& pts, double cx, double cy, double scale, double* coef) {
  double A[N * N] = {0}, b[N] = {0};
  for (const Sample& s : pts) {
    double x = (s.X - cx) / scale, y = (s.Y - cy) / scale;
    double f[6] = {1, x, y, x * x, x * y, y * y};
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) A[i * N + j] += f[i] * f[j];
      b[i] += f[i] * s.Z;
    }
  }
  if (!solve(A, b, N)) return false;
  std::copy(b, b + N, coef);
  return true;
}

template <int N>
double evalSurface(const double* coef, double X, double Y, double cx, double cy, double scale) {
  double x = (X - cx) / scale, y = (Y - cy) / scale;
  double f[6] = {1, x, y, x * x, x * y, y * y};
  double z = 0;
  for (int i = 0; i < N; ++i) z += coef[i] * f[i];
  return z;
}

double distToSegment(float px, float py, const PointF& a, const PointF& b) {
  double dx = b.x - a.x, dy = b.y - a.y;
  double len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? std::clamp(((px - a.x) * dx + (py - a.y) * dy) / len2, 0.0, 1.0) : 0;
  return std::hypot(px - (a.x + t * dx), py - (a.y + t * dy));
}
}  // namespace

std::string checkNames(uint32_t bits) {
  static const std::pair<uint32_t, const char*> names[] = {
      {kNoDepth, "no-depth"},     {kTooSmall, "too-small"},      {kCoverage, "coverage"},
      {kPose, "pose"},            {kFaceWidth, "face-width"},    {kFlat, "flat"},
      {kNoseRelief, "nose-relief"}, {kEyeRecess, "eye-recess"},  {kDepthStep, "depth-step"},
      {kNoseOffset, "nose-offset"}, {kDistance, "distance"},     {kWindow, "window"},
      {kColour, "colour"},
      {kBlink, "blink"},          {kMotion, "micro-motion"},     {kColourOnly, "colour-only"}};
  std::string out;
  for (const auto& n : names)
    if (bits & n.first) out += (out.empty() ? "" : ",") + std::string(n.second);
  return out;
}

DepthFeatures measureDepth(const CameraFrame& frame, const FaceResult& face, const LivenessConfig& cfg) {
  DepthFeatures f;
  if (!frame.hasDepth()) {
    f.failed = kNoDepth;
    return f;
  }
  if (face.box.size < cfg.minFacePx) {
    f.failed = kTooSmall;
    return f;
  }
  const int W = frame.width, H = frame.height;
  const CameraIntrinsics& k = frame.intrinsics;
  const PointF* lm = face.landmarks;
  const PointF eyeL = face.points5[0], eyeR = face.points5[1];
  const double iod = std::max(4.0, static_cast<double>(std::hypot(eyeR.x - eyeL.x, eyeR.y - eyeL.y)));
  auto depthAt = [&](int x, int y) -> float {
    if (x < 0 || y < 0 || x >= W || y >= H) return 0;
    return frame.depth[static_cast<size_t>(y) * W + x];
  };
  auto backProject = [&](float u, float v, double z, Sample* s) {
    s->u = u;
    s->v = v;
    s->Z = z;
    s->X = (u - k.cx) * z / k.fx;
    s->Y = (v - k.cy) * z / k.fy;
  };

  // Face region: jaw line and brows, shrunk toward the centre so the silhouette's mixed pixels stay out.
  std::vector<PointF> poly;
  for (int i = 0; i <= 16; ++i) poly.push_back(lm[i]);
  for (int i = 26; i >= 17; --i) poly.push_back(lm[i]);
  PointF c;
  for (const PointF& p : poly) { c.x += p.x / poly.size(); c.y += p.y / poly.size(); }
  float x0 = 1e9f, x1 = -1e9f, y0 = 1e9f, y1 = -1e9f;
  for (PointF& p : poly) {
    p.x = c.x + (p.x - c.x) * 0.9f;
    p.y = c.y + (p.y - c.y) * 0.9f;
    x0 = std::min(x0, p.x); x1 = std::max(x1, p.x); y0 = std::min(y0, p.y); y1 = std::max(y1, p.y);
  }
  const int step = std::max(1, static_cast<int>(std::lround(iod / 14)));
  const int gx0 = std::max(0, static_cast<int>(x0)), gx1 = std::min(W - 1, static_cast<int>(x1));
  const int gy0 = std::max(0, static_cast<int>(y0)), gy1 = std::min(H - 1, static_cast<int>(y1));
  const int gw = (gx1 - gx0) / step + 1, gh = (gy1 - gy0) / step + 1;
  if (gw < 3 || gh < 3) {
    f.failed = kTooSmall;
    return f;
  }
  std::vector<float> grid(static_cast<size_t>(gw) * gh, -1);  // -1 outside, 0 no depth, else mm
  int total = 0;
  std::vector<float> valid;
  for (int j = 0; j < gh; ++j)
    for (int i = 0; i < gw; ++i) {
      int x = gx0 + i * step, y = gy0 + j * step;
      if (!insidePolygon(poly, static_cast<float>(x), static_cast<float>(y))) continue;
      ++total;
      float z = depthAt(x, y);
      grid[static_cast<size_t>(j) * gw + i] = z;
      if (z > 0) valid.push_back(z);
    }
  if (total < 20) {
    f.failed = kTooSmall;
    return f;
  }
  f.measured = true;
  std::vector<float> tmp = valid;
  const float zMed = median(tmp);
  f.depthMm = zMed;
  // Face samples: within 120 mm of the median depth (a face is about 100 mm deep from nose to ears).
  std::vector<Sample> pts;
  for (int j = 0; j < gh; ++j)
    for (int i = 0; i < gw; ++i) {
      float z = grid[static_cast<size_t>(j) * gw + i];
      if (z <= 0) continue;
      if (std::fabs(z - zMed) > 120) {
        grid[static_cast<size_t>(j) * gw + i] = 0;
        continue;
      }
      Sample s;
      backProject(static_cast<float>(gx0 + i * step), static_cast<float>(gy0 + j * step), z, &s);
      pts.push_back(s);
    }
  f.samples = static_cast<int>(pts.size());
  f.coverage = static_cast<float>(pts.size()) / total;
  if (f.coverage < cfg.minDepthCoverage || pts.size() < 20) {
    f.failed |= kCoverage;
    return f;
  }

  // Plane: orientation of the face surface and how flat it is.
  double mx = 0, my = 0;
  for (const Sample& s : pts) { mx += s.X; my += s.Y; }
  mx /= pts.size();
  my /= pts.size();
  const double scale = std::max(1.0, iod * zMed / k.fx);  // about the eye distance in mm
  double plane[3];
  if (!fitSurface<3>(pts, mx, my, scale, plane)) {
    f.failed |= kCoverage;
    return f;
  }
  double ss = 0;
  for (const Sample& s : pts) {
    double r = s.Z - evalSurface<3>(plane, s.X, s.Y, mx, my, scale);
    ss += r * r;
  }
  f.planeRmsMm = static_cast<float>(std::sqrt(ss / pts.size()));
  const double dzdx = plane[1] / scale, dzdy = plane[2] / scale;
  f.yawDeg = static_cast<float>(std::atan(dzdx) * kRadToDeg);
  f.pitchDeg = static_cast<float>(std::atan(dzdy) * kRadToDeg);

  // Metric size: landmarks back-projected onto the plane.
  auto onPlane = [&](const PointF& p) {
    double dx = (p.x - k.cx) / k.fx, dy = (p.y - k.cy) / k.fy;
    // Z = c0 + dzdx (X - mx) + dzdy (Y - my), X = dx Z, Y = dy Z
    double c0 = plane[0] - dzdx * mx - dzdy * my;
    double denom = 1 - dzdx * dx - dzdy * dy;
    double z = std::fabs(denom) > 1e-6 ? c0 / denom : zMed;
    return Sample{p.x, p.y, dx * z, dy * z, z};
  };
  auto dist3 = [](const Sample& a, const Sample& b) { return std::sqrt((a.X - b.X) * (a.X - b.X) + (a.Y - b.Y) * (a.Y - b.Y) + (a.Z - b.Z) * (a.Z - b.Z)); };
  f.faceWidthMm = static_cast<float>(dist3(onPlane(lm[0]), onPlane(lm[16])));
  f.eyeDistanceMm = static_cast<float>(dist3(onPlane(eyeL), onPlane(eyeR)));

  // Curved surface fitted to the face without the nose and the eyes; the nose must stand out of it.
  auto inNose = [&](float u, float v) {
    return distToSegment(u, v, lm[27], lm[30]) < 0.3 * iod || std::hypot(u - lm[33].x, v - lm[33].y) < 0.4 * iod;
  };
  auto inEye = [&](float u, float v) {
    return std::hypot(u - eyeL.x, v - eyeL.y) < 0.33 * iod || std::hypot(u - eyeR.x, v - eyeR.y) < 0.33 * iod;
  };
  std::vector<Sample> rest;
  for (const Sample& s : pts)
    if (!inNose(s.u, s.v) && !inEye(s.u, s.v)) rest.push_back(s);
  double quad[6];
  if (rest.size() < 12 || !fitSurface<6>(rest, mx, my, scale, quad)) {
    f.failed |= kCoverage;
    return f;
  }
  ss = 0;
  for (const Sample& s : rest) {
    double r = s.Z - evalSurface<6>(quad, s.X, s.Y, mx, my, scale);
    ss += r * r;
  }
  f.curvedRmsMm = static_cast<float>(std::sqrt(ss / rest.size()));
  // Only pixels on the face enter the relief measures: a background pixel back-projected at its own depth
  // lies far outside the region the surface was fitted to.
  auto isFace = [zMed](float z) { return z > 0 && std::fabs(z - zMed) <= 120; };
  // Relief of a small disc of pixels (every pixel, not the grid) against the curved surface: positive
  // toward the camera. Returns false when the disc has too few measurements.
  auto relief = [&](PointF centre, double radius, float* out) {
    std::vector<float> r;
    int rad = std::max(1, static_cast<int>(std::ceil(radius)));
    for (int y = static_cast<int>(centre.y) - rad; y <= static_cast<int>(centre.y) + rad; ++y)
      for (int x = static_cast<int>(centre.x) - rad; x <= static_cast<int>(centre.x) + rad; ++x) {
        if (std::hypot(x - centre.x, y - centre.y) > radius) continue;
        float z = depthAt(x, y);
        if (!isFace(z)) continue;
        Sample s;
        backProject(static_cast<float>(x), static_cast<float>(y), z, &s);
        r.push_back(static_cast<float>(evalSurface<6>(quad, s.X, s.Y, mx, my, scale) - s.Z));
      }
    if (r.size() < 3) return false;
    *out = median(r);
    return true;
  };
  // Nose: the highest part of the relief near the nose-tip landmark (mean over a small window, searched
  // within 0.3 eye distances), so that a landmark a few millimetres off the narrow tip does not matter.
  {
    const double R = 0.3 * iod;
    const int r = std::max(1, static_cast<int>(std::lround(0.07 * iod)));
    const int cx = static_cast<int>(std::lround(lm[30].x)), cy = static_cast<int>(std::lround(lm[30].y));
    const int half = static_cast<int>(std::ceil(R)) + r, side = 2 * half + 1;
    // Integral images of the relief and of the count of measured pixels over the patch.
    std::vector<double> sum(static_cast<size_t>(side + 1) * (side + 1), 0.0), cnt(sum.size(), 0.0);
    for (int j = 0; j < side; ++j) {
      double rowSum = 0, rowCnt = 0;
      for (int i = 0; i < side; ++i) {
        int x = cx - half + i, y = cy - half + j;
        float z = depthAt(x, y);
        if (isFace(z)) {
          Sample q;
          backProject(static_cast<float>(x), static_cast<float>(y), z, &q);
          rowSum += evalSurface<6>(quad, q.X, q.Y, mx, my, scale) - q.Z;
          rowCnt += 1;
        }
        sum[static_cast<size_t>(j + 1) * (side + 1) + i + 1] = sum[static_cast<size_t>(j) * (side + 1) + i + 1] + rowSum;
        cnt[static_cast<size_t>(j + 1) * (side + 1) + i + 1] = cnt[static_cast<size_t>(j) * (side + 1) + i + 1] + rowCnt;
      }
    }
    auto box = [&](const std::vector<double>& t, int i0, int j0, int i1, int j1) {  // [i0, i1) x [j0, j1)
      return t[static_cast<size_t>(j1) * (side + 1) + i1] - t[static_cast<size_t>(j0) * (side + 1) + i1] -
             t[static_cast<size_t>(j1) * (side + 1) + i0] + t[static_cast<size_t>(j0) * (side + 1) + i0];
    };
    const double minCount = 0.5 * (2 * r + 1) * (2 * r + 1);
    bool found = false;
    double best = 0;
    for (int dj = -half + r; dj <= half - r; ++dj)
      for (int di = -half + r; di <= half - r; ++di) {
        if (di * di + dj * dj > R * R) continue;
        int i = di + half, j = dj + half;
        double n = box(cnt, i - r, j - r, i + r + 1, j + r + 1);
        if (n < minCount) continue;
        double mean = box(sum, i - r, j - r, i + r + 1, j + r + 1) / n;
        if (!found || mean > best) {
          best = mean;
          found = true;
        }
      }
    f.noseReliefMm = found ? static_cast<float>(best) : 0.0f;
  }
  float recessL = 0, recessR = 0;
  bool hasL = relief(eyeL, std::max(1.5, 0.15 * iod), &recessL);
  bool hasR = relief(eyeR, std::max(1.5, 0.15 * iod), &recessR);
  f.eyeRecessMm = std::max(hasL ? -recessL : 0.0f, hasR ? -recessR : 0.0f);

  // Depth steps between neighbouring face samples (edges of holes or of a sheet inside the face).
  int pairs = 0, steps = 0;
  for (int j = 0; j < gh; ++j)
    for (int i = 0; i < gw; ++i) {
      float z = grid[static_cast<size_t>(j) * gw + i];
      if (z <= 0) continue;
      float right = i + 1 < gw ? grid[static_cast<size_t>(j) * gw + i + 1] : -1;
      float down = j + 1 < gh ? grid[static_cast<size_t>(j + 1) * gw + i] : -1;
      for (float n : {right, down}) {
        if (n <= 0) continue;
        ++pairs;
        if (std::fabs(n - z) > 25) ++steps;
      }
    }
  f.depthStepShare = pairs ? static_cast<float>(steps) / pairs : 0;

  // Closest part of the face (nearest 5 % of the samples): on a face it is the nose.
  std::vector<Sample> byDepth = pts;
  size_t nearest = std::max<size_t>(3, byDepth.size() / 20);
  std::partial_sort(byDepth.begin(), byDepth.begin() + nearest, byDepth.end(),
                    [](const Sample& a, const Sample& b) { return a.Z < b.Z; });
  double nu = 0, nv = 0;
  for (size_t i = 0; i < nearest; ++i) { nu += byDepth[i].u / nearest; nv += byDepth[i].v / nearest; }
  f.noseOffset = static_cast<float>(std::hypot(nu - lm[30].x, nv - lm[30].y) / iod);

  if (f.depthMm > cfg.maxDistanceMm) f.failed |= kDistance;
  if (std::fabs(f.yawDeg) > cfg.maxYawDeg || std::fabs(f.pitchDeg) > cfg.maxPitchDeg) f.failed |= kPose;
  if (f.faceWidthMm < cfg.minFaceWidthMm || f.faceWidthMm > cfg.maxFaceWidthMm) f.failed |= kFaceWidth;
  if (f.planeRmsMm < cfg.minPlaneRmsMm) f.failed |= kFlat;
  if (f.noseReliefMm < cfg.minNoseReliefMm || f.noseReliefMm > cfg.maxNoseReliefMm) f.failed |= kNoseRelief;
  if (f.eyeRecessMm > cfg.maxEyeRecessMm) f.failed |= kEyeRecess;
  if (f.depthStepShare > cfg.maxDepthStepShare) f.failed |= kDepthStep;
  if (f.noseOffset > cfg.maxNoseOffset) f.failed |= kNoseOffset;
  return f;
}

void LivenessTracker::noFace(int64_t timestampUs) {
  if (lastUs_ >= 0 && (timestampUs - lastUs_) / 1000 > config_.maxGapMs) {
    window_.clear();
    eyes_.clear();
    framesInTrack_ = 0;
    lastUs_ = -1;
  }
}

FrameDecision LivenessTracker::update(int64_t t, const FaceResult& face, const DepthFeatures& depth, bool hasDepth,
                                      float colour) {
  FrameDecision d;
  // Same track: close in time and the box overlaps the previous one.
  bool same = lastUs_ >= 0 && (t - lastUs_) / 1000 <= config_.maxGapMs;
  if (same) {
    const FaceBox& a = lastBox_;
    const FaceBox& b = face.box;
    float ix = std::max(0.0f, std::min(a.x + a.size, b.x + b.size) - std::max(a.x, b.x));
    float iy = std::max(0.0f, std::min(a.y + a.size, b.y + b.size) - std::max(a.y, b.y));
    float inter = ix * iy, uni = a.size * a.size + b.size * b.size - inter;
    same = uni > 0 && inter / uni >= 0.3f;
  }
  if (!same) {
    window_.clear();
    eyes_.clear();
    framesInTrack_ = 0;
    d.newTrack = true;
  }
  lastBox_ = face.box;
  lastUs_ = t;
  ++framesInTrack_;

  window_.push_back(Entry{t, hasDepth && depth.failed == 0, colour, depth.depthMm});
  while (static_cast<int>(window_.size()) > std::max(1, config_.windowFrames)) window_.pop_front();
  eyes_.emplace_back(t, (face.eyeLeft + face.eyeRight) / 2);
  while (!eyes_.empty() && (t - eyes_.front().first) / 1000 > config_.blinkWindowMs) eyes_.pop_front();

  d.windowSize = static_cast<int>(window_.size());
  std::vector<float> colours, depths;
  for (const Entry& e : window_) {
    if (e.depthPass) ++d.windowPass;
    if (e.colour >= 0) colours.push_back(e.colour);
    if (e.depthMm > 0) depths.push_back(e.depthMm);
  }
  d.colour = colours.empty() ? -1 : median(colours);
  if (depths.size() >= 2) {
    double m = 0, v = 0;
    for (float z : depths) m += z / depths.size();
    for (float z : depths) v += (z - m) * (z - m) / depths.size();
    d.microMotionMm = static_cast<float>(std::sqrt(v));
  }
  // Blink: an open-closed-open sequence of the mean eye openness within the window.
  {
    bool open1 = false, closed = false;
    for (const auto& e : eyes_) {
      if (!closed) {
        if (e.second >= config_.blinkOpen) open1 = true;
        else if (open1 && e.second <= config_.blinkClosed) closed = true;
      } else if (e.second >= config_.blinkOpen) {
        d.blinkSeen = true;
        break;
      }
    }
  }

  uint32_t failed = 0;
  if (hasDepth) {
    failed |= depth.failed;
    if (d.windowPass < config_.minPassFrames) failed |= kWindow;
    if (config_.colourMin > 0 && (d.colour < 0 || d.colour < config_.colourMin)) failed |= kColour;
    if (config_.minMicroMotionMm > 0 && (d.windowSize < 2 || d.microMotionMm < config_.minMicroMotionMm)) failed |= kMotion;
  } else {
    failed |= kNoDepth;
    if (config_.allowColourOnly) {
      failed &= ~kNoDepth;
      int withColour = 0;
      for (const Entry& e : window_) withColour += e.colour >= 0;
      if (withColour < std::min(config_.minPassFrames, std::max(1, config_.windowFrames / std::max(1, config_.colourEvery))))
        failed |= kWindow;
      if (d.colour < config_.colourOnlyThreshold) failed |= kColourOnly;
    }
  }
  if (config_.requireBlink && !d.blinkSeen) failed |= kBlink;
  // With depth, the current frame's own checks are part of the decision (failed |= depth.failed above):
  // a live face is never served from a frame that did not pass itself.
  d.failed = failed;
  d.live = failed == 0;
  return d;
}

}  // namespace facecheck
