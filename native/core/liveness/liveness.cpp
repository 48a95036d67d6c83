#include "core/liveness/liveness.h"

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
      {kNoseOffset, "nose-offset"}, {kDistance, "distance"},     {kInfrared, "infrared"}, {kWindow, "window"},
      {kColour, "colour"},
      {kBlink, "blink"},          {kMotion, "micro-motion"},     {kColourOnly, "colour-only"}};
  std::string out;
  for (const auto& n : names)
    if (bits & n.first) out += (out.empty() ? "" : ",") + std::string(n.second);
  return out;
}

namespace {

// The frame and face one measurement works on, and the conversions every step needs.
struct DepthContext {
  DepthContext(const CameraFrame& frame, const FaceResult& face)
      : frame(frame), W(frame.width), H(frame.height), k(frame.intrinsics), lm(face.landmarks),
        eyeL(face.points5[0]), eyeR(face.points5[1]),
        iod(std::max(4.0, static_cast<double>(std::hypot(eyeR.x - eyeL.x, eyeR.y - eyeL.y)))) {}
  float depthAt(int x, int y) const {
    if (x < 0 || y < 0 || x >= W || y >= H) return 0;
    return frame.depth[static_cast<size_t>(y) * W + x];
  }
  void backProject(float u, float v, double z, Sample* s) const {
    s->u = u;
    s->v = v;
    s->Z = z;
    s->X = (u - k.cx) * z / k.fx;
    s->Y = (v - k.cy) * z / k.fy;
  }

  const CameraFrame& frame;
  const int W, H;
  const CameraIntrinsics& k;
  const PointF* lm;
  const PointF eyeL, eyeR;
  const double iod;  // eye distance in pixels (at least 4)
};

// The face region sampled on a grid about 1/14 of the eye distance apart.
struct FaceGrid {
  int x0 = 0, y0 = 0, step = 1, w = 0, h = 0;
  std::vector<float> z;  // -1 outside the region, 0 no depth, else mm
  int inside = 0;        // grid points inside the region
  float& at(int i, int j) { return z[static_cast<size_t>(j) * w + i]; }
  float at(int i, int j) const { return z[static_cast<size_t>(j) * w + i]; }
};

// Centre and scale of the surface fits (about the eye distance in mm, so the quadric terms stay in range).
struct FitFrame {
  double mx = 0, my = 0, scale = 1;
};

// Face region: jaw line and brows, shrunk toward the centre so the silhouette's mixed pixels stay out.
// False when too few grid points fall inside it.
bool sampleFaceRegion(const DepthContext& c, FaceGrid* g) {
  std::vector<PointF> poly;
  for (int i = 0; i <= 16; ++i) poly.push_back(c.lm[i]);
  for (int i = 26; i >= 17; --i) poly.push_back(c.lm[i]);
  PointF centre;
  for (const PointF& p : poly) { centre.x += p.x / poly.size(); centre.y += p.y / poly.size(); }
  float x0 = 1e9f, x1 = -1e9f, y0 = 1e9f, y1 = -1e9f;
  for (PointF& p : poly) {
    p.x = centre.x + (p.x - centre.x) * 0.9f;
    p.y = centre.y + (p.y - centre.y) * 0.9f;
    x0 = std::min(x0, p.x); x1 = std::max(x1, p.x); y0 = std::min(y0, p.y); y1 = std::max(y1, p.y);
  }
  g->step = std::max(1, static_cast<int>(std::lround(c.iod / 14)));
  const int gx0 = std::max(0, static_cast<int>(x0)), gx1 = std::min(c.W - 1, static_cast<int>(x1));
  const int gy0 = std::max(0, static_cast<int>(y0)), gy1 = std::min(c.H - 1, static_cast<int>(y1));
  g->x0 = gx0;
  g->y0 = gy0;
  g->w = (gx1 - gx0) / g->step + 1;
  g->h = (gy1 - gy0) / g->step + 1;
  if (g->w < 3 || g->h < 3) return false;
  g->z.assign(static_cast<size_t>(g->w) * g->h, -1);
  for (int j = 0; j < g->h; ++j)
    for (int i = 0; i < g->w; ++i) {
      int x = gx0 + i * g->step, y = gy0 + j * g->step;
      if (!insidePolygon(poly, static_cast<float>(x), static_cast<float>(y))) continue;
      ++g->inside;
      g->at(i, j) = c.depthAt(x, y);
    }
  return g->inside >= 20;
}

float medianDepth(const FaceGrid& g) {
  std::vector<float> valid;
  for (float z : g.z)
    if (z > 0) valid.push_back(z);
  return median(valid);
}

// Face samples: within 120 mm of the median depth (a face is about 100 mm deep from nose to ears); grid
// points further away are marked as without depth.
std::vector<Sample> faceSamples(const DepthContext& c, FaceGrid* g, float zMed) {
  std::vector<Sample> pts;
  for (int j = 0; j < g->h; ++j)
    for (int i = 0; i < g->w; ++i) {
      float z = g->at(i, j);
      if (z <= 0) continue;
      if (std::fabs(z - zMed) > 120) {
        g->at(i, j) = 0;
        continue;
      }
      Sample s;
      c.backProject(static_cast<float>(g->x0 + i * g->step), static_cast<float>(g->y0 + j * g->step), z, &s);
      pts.push_back(s);
    }
  return pts;
}

template <int N>
double rmsFromSurface(const std::vector<Sample>& pts, const double* coef, const FitFrame& ff) {
  double ss = 0;
  for (const Sample& s : pts) {
    double r = s.Z - evalSurface<N>(coef, s.X, s.Y, ff.mx, ff.my, ff.scale);
    ss += r * r;
  }
  return std::sqrt(ss / pts.size());
}

// Plane: orientation of the face surface (yaw, pitch) and how flat it is. False when it cannot be fitted.
bool fitFacePlane(const DepthContext& c, const std::vector<Sample>& pts, float zMed, FitFrame* ff, double* plane,
                  DepthFeatures* f) {
  double mx = 0, my = 0;
  for (const Sample& s : pts) { mx += s.X; my += s.Y; }
  mx /= pts.size();
  my /= pts.size();
  ff->mx = mx;
  ff->my = my;
  ff->scale = std::max(1.0, c.iod * zMed / c.k.fx);  // about the eye distance in mm
  if (!fitSurface<3>(pts, ff->mx, ff->my, ff->scale, plane)) return false;
  f->planeRmsMm = static_cast<float>(rmsFromSurface<3>(pts, plane, *ff));
  const double dzdx = plane[1] / ff->scale, dzdy = plane[2] / ff->scale;
  f->yawDeg = static_cast<float>(std::atan(dzdx) * kRadToDeg);
  f->pitchDeg = static_cast<float>(std::atan(dzdy) * kRadToDeg);
  return true;
}

// Metric size: landmarks back-projected onto the plane.
void measureMetricSize(const DepthContext& c, const double* plane, const FitFrame& ff, float zMed, DepthFeatures* f) {
  const double dzdx = plane[1] / ff.scale, dzdy = plane[2] / ff.scale;
  const double mx = ff.mx, my = ff.my;
  const CameraIntrinsics& k = c.k;
  auto onPlane = [&](const PointF& p) {
    double dx = (p.x - k.cx) / k.fx, dy = (p.y - k.cy) / k.fy;
    // Z = c0 + dzdx (X - mx) + dzdy (Y - my), X = dx Z, Y = dy Z
    double c0 = plane[0] - dzdx * mx - dzdy * my;
    double denom = 1 - dzdx * dx - dzdy * dy;
    double z = std::fabs(denom) > 1e-6 ? c0 / denom : zMed;
    return Sample{p.x, p.y, dx * z, dy * z, z};
  };
  auto dist3 = [](const Sample& a, const Sample& b) { return std::sqrt((a.X - b.X) * (a.X - b.X) + (a.Y - b.Y) * (a.Y - b.Y) + (a.Z - b.Z) * (a.Z - b.Z)); };
  f->faceWidthMm = static_cast<float>(dist3(onPlane(c.lm[0]), onPlane(c.lm[16])));
  f->eyeDistanceMm = static_cast<float>(dist3(onPlane(c.eyeL), onPlane(c.eyeR)));
}

// Curved surface fitted to the face without the nose and the eyes (the relief measures are taken against
// it). False when too little is left to fit.
bool fitCurvedSurface(const DepthContext& c, const std::vector<Sample>& pts, const FitFrame& ff, double* quad,
                      DepthFeatures* f) {
  const PointF* lm = c.lm;
  const double iod = c.iod;
  auto inNose = [&](float u, float v) {
    return distToSegment(u, v, lm[27], lm[30]) < 0.3 * iod || std::hypot(u - lm[33].x, v - lm[33].y) < 0.4 * iod;
  };
  auto inEye = [&](float u, float v) {
    return std::hypot(u - c.eyeL.x, v - c.eyeL.y) < 0.33 * iod || std::hypot(u - c.eyeR.x, v - c.eyeR.y) < 0.33 * iod;
  };
  std::vector<Sample> rest;
  for (const Sample& s : pts)
    if (!inNose(s.u, s.v) && !inEye(s.u, s.v)) rest.push_back(s);
  if (rest.size() < 12 || !fitSurface<6>(rest, ff.mx, ff.my, ff.scale, quad)) return false;
  f->curvedRmsMm = static_cast<float>(rmsFromSurface<6>(rest, quad, ff));
  return true;
}

// Only pixels on the face enter the relief measures: a background pixel back-projected at its own depth
// lies far outside the region the surface was fitted to.
bool isFaceDepth(float z, float zMed) { return z > 0 && std::fabs(z - zMed) <= 120; }

// Relief of one pixel against the curved surface: positive toward the camera.
double reliefAt(const DepthContext& c, const double* quad, const FitFrame& ff, int x, int y, float z) {
  Sample s;
  c.backProject(static_cast<float>(x), static_cast<float>(y), z, &s);
  return evalSurface<6>(quad, s.X, s.Y, ff.mx, ff.my, ff.scale) - s.Z;
}

// Median relief of a small disc of pixels (every pixel, not the grid); false when the disc has too few
// measurements.
bool discRelief(const DepthContext& c, const double* quad, const FitFrame& ff, float zMed, PointF centre,
                double radius, float* out) {
  std::vector<float> r;
  int rad = std::max(1, static_cast<int>(std::ceil(radius)));
  for (int y = static_cast<int>(centre.y) - rad; y <= static_cast<int>(centre.y) + rad; ++y)
    for (int x = static_cast<int>(centre.x) - rad; x <= static_cast<int>(centre.x) + rad; ++x) {
      if (std::hypot(x - centre.x, y - centre.y) > radius) continue;
      float z = c.depthAt(x, y);
      if (!isFaceDepth(z, zMed)) continue;
      r.push_back(static_cast<float>(reliefAt(c, quad, ff, x, y, z)));
    }
  if (r.size() < 3) return false;
  *out = median(r);
  return true;
}

// Nose: the highest part of the relief near the nose-tip landmark (mean over a small window, searched
// within 0.3 eye distances), so that a landmark a few millimetres off the narrow tip does not matter.
float noseRelief(const DepthContext& c, const double* quad, const FitFrame& ff, float zMed) {
  const double iod = c.iod;
  const double R = 0.3 * iod;
  const int r = std::max(1, static_cast<int>(std::lround(0.07 * iod)));
  const int cx = static_cast<int>(std::lround(c.lm[30].x)), cy = static_cast<int>(std::lround(c.lm[30].y));
  const int half = static_cast<int>(std::ceil(R)) + r, side = 2 * half + 1;
  // Integral images of the relief and of the count of measured pixels over the patch.
  std::vector<double> sum(static_cast<size_t>(side + 1) * (side + 1), 0.0), cnt(sum.size(), 0.0);
  for (int j = 0; j < side; ++j) {
    double rowSum = 0, rowCnt = 0;
    for (int i = 0; i < side; ++i) {
      int x = cx - half + i, y = cy - half + j;
      float z = c.depthAt(x, y);
      if (isFaceDepth(z, zMed)) {
        rowSum += reliefAt(c, quad, ff, x, y, z);
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
  return found ? static_cast<float>(best) : 0.0f;
}

// Eyes behind the curved surface (the deeper of the two): a cut-out photo has holes there.
float eyeRecess(const DepthContext& c, const double* quad, const FitFrame& ff, float zMed) {
  float recessL = 0, recessR = 0;
  bool hasL = discRelief(c, quad, ff, zMed, c.eyeL, std::max(1.5, 0.15 * c.iod), &recessL);
  bool hasR = discRelief(c, quad, ff, zMed, c.eyeR, std::max(1.5, 0.15 * c.iod), &recessR);
  return std::max(hasL ? -recessL : 0.0f, hasR ? -recessR : 0.0f);
}

// Share of neighbouring face samples more than 25 mm apart in depth (edges of holes or of a sheet inside
// the face).
float depthStepShare(const FaceGrid& g) {
  int pairs = 0, steps = 0;
  for (int j = 0; j < g.h; ++j)
    for (int i = 0; i < g.w; ++i) {
      float z = g.at(i, j);
      if (z <= 0) continue;
      float right = i + 1 < g.w ? g.at(i + 1, j) : -1;
      float down = j + 1 < g.h ? g.at(i, j + 1) : -1;
      for (float n : {right, down}) {
        if (n <= 0) continue;
        ++pairs;
        if (std::fabs(n - z) > 25) ++steps;
      }
    }
  return pairs ? static_cast<float>(steps) / pairs : 0;
}

// Distance of the closest part of the face (nearest 5 % of the samples) from the nose tip, in eye
// distances: on a face the closest part is the nose.
float noseOffset(const DepthContext& c, const std::vector<Sample>& pts) {
  std::vector<Sample> byDepth = pts;
  size_t nearest = std::max<size_t>(3, byDepth.size() / 20);
  std::partial_sort(byDepth.begin(), byDepth.begin() + nearest, byDepth.end(),
                    [](const Sample& a, const Sample& b) { return a.Z < b.Z; });
  double nu = 0, nv = 0;
  for (size_t i = 0; i < nearest; ++i) { nu += byDepth[i].u / nearest; nv += byDepth[i].v / nearest; }
  return static_cast<float>(std::hypot(nu - c.lm[30].x, nv - c.lm[30].y) / c.iod);
}

// The projector's dot pattern on the face: at each face sample (a pixel with depth on the face) whose
// infrared level and most of its 3x3 neighbours are known, how far the level departs from the
// neighbourhood's mean, relative to that mean; averaged. A face whose infrared image is mostly unknown (a
// source that maps it through a sparse depth) shows no pattern.
float infraredPattern(const CameraFrame& frame, const std::vector<Sample>& pts) {
  const int W = frame.width, H = frame.height;
  double sum = 0;
  size_t known = 0;
  for (const Sample& s : pts) {
    const int x = static_cast<int>(s.u + 0.5f), y = static_cast<int>(s.v + 0.5f);
    if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) continue;
    const uint8_t centre = frame.ir[static_cast<size_t>(y) * W + x];
    if (!centre) continue;
    double local = 0;
    int count = 0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const uint8_t v = frame.ir[static_cast<size_t>(y + dy) * W + x + dx];
        if (v) { local += v; ++count; }
      }
    if (count < 5) continue;
    local /= count;
    sum += std::fabs(centre - local) / std::max(1.0, local);
    ++known;
  }
  if (known < 20 || known * 10 < pts.size() * 3) return 0.0f;
  return static_cast<float>(sum / known);
}

uint32_t failedChecks(const DepthFeatures& f, const LivenessConfig& cfg) {
  uint32_t failed = 0;
  if (f.depthMm > cfg.maxDistanceMm) failed |= kDistance;
  if (std::fabs(f.yawDeg) > cfg.maxYawDeg || std::fabs(f.pitchDeg) > cfg.maxPitchDeg) failed |= kPose;
  if (f.faceWidthMm < cfg.minFaceWidthMm || f.faceWidthMm > cfg.maxFaceWidthMm) failed |= kFaceWidth;
  if (f.planeRmsMm < cfg.minPlaneRmsMm) failed |= kFlat;
  if (f.noseReliefMm < cfg.minNoseReliefMm || f.noseReliefMm > cfg.maxNoseReliefMm) failed |= kNoseRelief;
  if (f.eyeRecessMm > cfg.maxEyeRecessMm) failed |= kEyeRecess;
  if (f.depthStepShare > cfg.maxDepthStepShare) failed |= kDepthStep;
  if (f.noseOffset > cfg.maxNoseOffset) failed |= kNoseOffset;
  if (f.infraredPattern >= 0 && f.infraredPattern < cfg.minInfraredPattern) failed |= kInfrared;
  return failed;
}

}  // namespace

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
  const DepthContext c(frame, face);
  FaceGrid grid;
  if (!sampleFaceRegion(c, &grid)) {
    f.failed = kTooSmall;
    return f;
  }
  f.measured = true;
  const float zMed = medianDepth(grid);
  f.depthMm = zMed;
  const std::vector<Sample> pts = faceSamples(c, &grid, zMed);
  f.samples = static_cast<int>(pts.size());
  f.coverage = static_cast<float>(pts.size()) / grid.inside;
  if (f.coverage < cfg.minDepthCoverage || pts.size() < 20) {
    f.failed |= kCoverage;
    return f;
  }
  FitFrame ff;
  double plane[3], quad[6];
  if (!fitFacePlane(c, pts, zMed, &ff, plane, &f)) {
    f.failed |= kCoverage;
    return f;
  }
  measureMetricSize(c, plane, ff, zMed, &f);
  if (!fitCurvedSurface(c, pts, ff, quad, &f)) {
    f.failed |= kCoverage;
    return f;
  }
  f.noseReliefMm = noseRelief(c, quad, ff, zMed);
  f.eyeRecessMm = eyeRecess(c, quad, ff, zMed);
  f.depthStepShare = depthStepShare(grid);
  f.noseOffset = noseOffset(c, pts);
  if (!frame.ir.empty()) f.infraredPattern = infraredPattern(frame, pts);
  f.failed |= failedChecks(f, cfg);
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
