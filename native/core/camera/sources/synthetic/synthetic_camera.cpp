#include "core/camera/sources/synthetic/synthetic_camera.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

namespace facecheck {

using synth::Mat3;
using synth::Mesh;
using synth::Rng;
using synth::Texture;
using synth::Vec3;
using synth::Vertex;

namespace {
constexpr double kPi = 3.14159265358979323846;
constexpr double kEyeDistanceMm = 63;  // adult mean distance of the eye centres

const char* const kKindNames[kSceneKinds] = {"none",          "live",       "print",       "print-tilted",
                                             "print-bent",    "screen-phone", "screen-tablet", "cutout-eyes",
                                             "photo-small",   "photo-large", "unplug"};

double gauss2(double dx, double dy, double sx, double sy) {
  return std::exp(-0.5 * ((dx * dx) / (sx * sx) + (dy * dy) / (sy * sy)));
}
double smoothstep(double e0, double e1, double x) {
  double t = std::clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3 - 2 * t);
}
}  // namespace

const char* sceneKindName(SceneKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool parseSceneKind(const std::string& name, SceneKind* kind) {
  for (int i = 0; i < kSceneKinds; ++i) {
    if (name == kKindNames[i]) {
      *kind = static_cast<SceneKind>(i);
      return true;
    }
  }
  return false;
}

bool isAttack(SceneKind kind) {
  return kind != SceneKind::None && kind != SceneKind::Live && kind != SceneKind::Unplug;
}

Result parseScenario(const std::string& text, std::vector<ScenarioItem>* items) {
  items->clear();
  std::string token;
  std::vector<std::string> tokens;
  for (char c : text) {
    if (c == ',' || c == ';' || c == '\n' || c == '\r') {
      tokens.push_back(token);
      token.clear();
    } else if (c != ' ' && c != '\t') {
      token.push_back(c);
    }
  }
  tokens.push_back(token);
  for (const std::string& t : tokens) {
    if (t.empty()) continue;
    std::string name = t, rest;
    size_t colon = t.find(':');
    size_t times = t.find('x', colon == std::string::npos ? 0 : colon);
    ScenarioItem item;
    int repeat = 1;
    if (colon != std::string::npos) {
      name = t.substr(0, colon);
      std::string secs = t.substr(colon + 1, times == std::string::npos ? std::string::npos : times - colon - 1);
      char* end = nullptr;
      item.seconds = std::strtod(secs.c_str(), &end);
      if (secs.empty() || *end != '\0' || !(item.seconds > 0) || item.seconds > 1e6)
        return Result::fail(Status::FieldsValidation, "scenario item \"" + t + "\": seconds must be a positive number");
    }
    if (times != std::string::npos && colon != std::string::npos) {
      char* end = nullptr;
      long n = std::strtol(t.c_str() + times + 1, &end, 10);
      if (*end != '\0' || n < 1 || n > 1000000)
        return Result::fail(Status::FieldsValidation, "scenario item \"" + t + "\": repeat count must be 1..1000000");
      repeat = static_cast<int>(n);
    }
    if (!parseSceneKind(name, &item.kind)) {
      std::string known;
      for (int i = 0; i < kSceneKinds; ++i) known += std::string(i ? "|" : "") + kKindNames[i];
      return Result::fail(Status::FieldsValidation, "scenario item \"" + t + "\": unknown kind (known: " + known + ")");
    }
    for (int i = 0; i < repeat; ++i) items->push_back(item);
  }
  return {};
}

namespace synth {

// A face photo turned into a head: the photo's face frame (eye centres 63 mm apart), feature positions
// from its landmarks, and a height field carrying the photo as texture (orthographic, the photo being
// frontal).
struct PreparedFace {
  Texture open;
  TexturePatch closed;  // the eyes closed, over `open`
  Texture body;  // 2x2: top row skin (neck), bottom row clothing (shoulders)
  double ox = 0, oy = 0, ex = 1, ey = 0, mmPerPx = 1;
  double noseX = 0, noseY = 45, bridgeX = 0, bridgeY = 8, mouthY = 75, chinY = 118, halfW = 70, browY = -22;
  double topY = -115;
  std::vector<Vec3> headPos, headNormal;  // face coordinates: x right, y down, z toward the camera
  std::vector<double> headU, headV;
  std::vector<int> headTris;
  std::vector<Vec3> bodyPos, bodyNormal;
  std::vector<double> bodyU, bodyV;
  std::vector<int> bodyTris;

  void toPhoto(double x, double y, double* u, double* v) const {
    double px = x / mmPerPx, py = y / mmPerPx;
    *u = ox + ex * px - ey * py;
    *v = oy + ey * px + ex * py;
  }
  void toFace(double u, double v, double* x, double* y) const {
    double dx = u - ox, dy = v - oy;
    *x = (ex * dx + ey * dy) * mmPerPx;
    *y = (-ey * dx + ex * dy) * mmPerPx;
  }
  double halfWidthAt(double y) const {
    double a0 = halfW * 1.04, top = -10;
    if (y < topY) return 0;
    if (y < top) return a0 * std::sqrt(std::max(0.0, 1 - std::pow((y - top) / (topY - top), 2)));
    if (y <= noseY) return a0;
    double chinHalf = 0.42 * a0;
    if (y <= chinY) return a0 - (a0 - chinHalf) * std::pow((y - noseY) / (chinY - noseY), 1.6);
    if (y < chinY + 9) return chinHalf * std::sqrt(std::max(0.0, 1 - std::pow((y - chinY) / 9, 2)));
    return 0;
  }
  // Height of the face surface toward the camera, mm (0 ~ the plane of the eye corners).
  double height(double x, double y, bool* inside) const {
    double a = halfWidthAt(y);
    *inside = a > 1 && std::fabs(x) < a;
    if (!*inside) return -80;
    double zx = 72 * (std::sqrt(std::max(0.0, 1 - (x / a) * (x / a))) - 1);
    double zy = 0;
    if (y < browY - 4) zy = -std::pow(browY - 4 - y, 2) / 220;
    if (y > mouthY) zy = -0.28 * (y - mouthY);
    double h = zx + zy;
    // Nose: a ridge from the bridge to the tip, the tip, the columella and the nostril wings.
    double nose = 0;
    if (y >= bridgeY && y <= noseY) {
      double t = (y - bridgeY) / std::max(1.0, noseY - bridgeY);
      double cx = bridgeX + (noseX - bridgeX) * t;
      double sigma = 5 + 5 * t;
      nose = (4 + 18 * std::pow(t, 1.2)) * std::exp(-0.5 * (x - cx) * (x - cx) / (sigma * sigma));
    } else if (y > noseY && y < noseY + 16) {
      double s = (y - noseY) / 16;
      nose = 22 * std::pow(1 - s, 1.5) * std::exp(-0.5 * (x - noseX) * (x - noseX) / 100);
    } else if (y < bridgeY && y > bridgeY - 18) {
      double s = (bridgeY - y) / 18;
      nose = 4 * (1 - s) * std::exp(-0.5 * (x - bridgeX) * (x - bridgeX) / 36);
    }
    nose = std::max(nose, 7 * gauss2(std::fabs(x - noseX) - 14, y - noseY + 2, 6, 5));
    h += nose;
    h -= 6.5 * gauss2(std::fabs(x) - kEyeDistanceMm / 2, y + 1, 13, 8.5);      // eye sockets
    h += 3 * std::exp(-0.5 * std::pow((y - browY) / 6, 2)) * (1 - smoothstep(42, 55, std::fabs(x)));  // brow ridge
    h += 4 * gauss2(std::fabs(x) - 40, y - noseY * 0.5, 13, 12);               // cheekbones
    h += 5 * gauss2(x, y - mouthY, 17, 7);                                     // lips
    h += 7 * gauss2(x, y - (chinY - 14), 16, 10);                              // chin
    return h;
  }
};

namespace {

// One eye to close: where it is, its size and the eyelid's colour.
struct EyeLid {
  double cx = 0, cy = 0, ax = 1, ay = 0, width = 0, height = 0, semiA = 0, semiB = 0;
  float lid[3] = {0, 0, 0};
  int x0 = 0, y0 = 0, x1 = -1, y1 = -1;  // the pixels it may change, clipped to the photo
};

// The eye starting at landmark `first` (36 or 42); false when the landmarks give no usable eye.
bool eyeLid(const Texture& open, const PointF* lm, int first, EyeLid* e) {
  for (int i = 0; i < 6; ++i) { e->cx += lm[first + i].x / 6; e->cy += lm[first + i].y / 6; }
  double wx = lm[first + 3].x - lm[first].x, wy = lm[first + 3].y - lm[first].y;
  e->width = std::hypot(wx, wy);
  if (e->width < 2) return false;
  e->ax = wx / e->width;
  e->ay = wy / e->width;
  double opening = (std::hypot(lm[first + 1].x - lm[first + 5].x, lm[first + 1].y - lm[first + 5].y) +
                    std::hypot(lm[first + 2].x - lm[first + 4].x, lm[first + 2].y - lm[first + 4].y)) / 2.0;
  e->height = std::max(e->width * 0.32, opening);
  // Eyelid colour: the skin between the eye and the brow.
  int brow = first == 36 ? 19 : 24;
  double sx = e->cx + (lm[brow].x - e->cx) * 0.5, sy = e->cy + (lm[brow].y - e->cy) * 0.5;
  int n = 0;
  int r = std::max(1, static_cast<int>(e->width * 0.12));
  for (int y = static_cast<int>(sy) - r; y <= static_cast<int>(sy) + r; ++y)
    for (int x = static_cast<int>(sx) - r; x <= static_cast<int>(sx) + r; ++x) {
      if (x < 0 || y < 0 || x >= open.width || y >= open.height) continue;
      for (int c = 0; c < 3; ++c) e->lid[c] += open.rgb[(static_cast<size_t>(y) * open.width + x) * 3 + c];
      ++n;
    }
  if (!n) return false;
  for (float& c : e->lid) c /= n;
  e->semiA = e->width * 0.62;
  e->semiB = e->height * 0.5 + e->width * 0.12;
  e->x0 = std::max(0, static_cast<int>(e->cx - e->semiA - 2));
  e->x1 = std::min(open.width - 1, static_cast<int>(e->cx + e->semiA + 2));
  e->y0 = std::max(0, static_cast<int>(e->cy - e->semiA - 2));
  e->y1 = std::min(open.height - 1, static_cast<int>(e->cy + e->semiA + 2));
  return e->x0 <= e->x1 && e->y0 <= e->y1;
}

// Paints eyelid skin with a lash line over the eye, in `patch` (which covers the eye's pixels).
void paintLid(const EyeLid& e, TexturePatch* patch) {
  for (int y = e.y0; y <= e.y1; ++y) {
    for (int x = e.x0; x <= e.x1; ++x) {
      double dx = x - e.cx, dy = y - e.cy;
      double u = dx * e.ax + dy * e.ay, v = -dx * e.ay + dy * e.ax;  // along and across the eye
      double d = std::sqrt((u * u) / (e.semiA * e.semiA) + (v * v) / (e.semiB * e.semiB));
      if (d >= 1) continue;
      double alpha = 1 - smoothstep(0.75, 1.0, d);
      // Lid shading: darker toward the lash line, which runs a little below the eye centre.
      double lineY = e.semiB * 0.25 + 0.15 * e.semiB * (u / e.semiA) * (u / e.semiA);
      double dl = std::fabs(v - lineY);
      double lash = std::exp(-0.5 * (dl * dl) / std::pow(std::max(0.7, e.height * 0.09), 2)) * (1 - std::pow(u / e.semiA, 2));
      double shade = 0.92 + 0.08 * (v / e.semiB);
      uint8_t* p = &patch->pixels.rgb[(static_cast<size_t>(y - patch->y) * patch->pixels.width + (x - patch->x)) * 3];
      for (int c = 0; c < 3; ++c) {
        double lidC = e.lid[c] * shade * (1 - 0.7 * lash);
        p[c] = static_cast<uint8_t>(std::clamp(p[c] * (1 - alpha) + lidC * alpha, 0.0, 255.0));
      }
    }
  }
}

// The photo with both eyes closed, as a patch over it: each eye becomes eyelid skin with a lash line.
// Only the rectangle around the eyes is stored (a whole copy of the photo would double its memory).
TexturePatch closeEyes(const Texture& open, const PointF* lm) {
  std::vector<EyeLid> eyes;
  for (int first : {36, 42}) {
    EyeLid e;
    if (eyeLid(open, lm, first, &e)) eyes.push_back(e);
  }
  TexturePatch patch;
  if (eyes.empty()) return patch;
  int x0 = open.width, y0 = open.height, x1 = -1, y1 = -1;
  for (const EyeLid& e : eyes) {
    x0 = std::min(x0, e.x0);
    y0 = std::min(y0, e.y0);
    x1 = std::max(x1, e.x1);
    y1 = std::max(y1, e.y1);
  }
  patch.x = x0;
  patch.y = y0;
  patch.pixels.width = x1 - x0 + 1;
  patch.pixels.height = y1 - y0 + 1;
  patch.pixels.rgb.resize(static_cast<size_t>(patch.pixels.width) * patch.pixels.height * 3);
  for (int y = y0; y <= y1; ++y)
    std::copy(&open.rgb[(static_cast<size_t>(y) * open.width + x0) * 3], &open.rgb[(static_cast<size_t>(y) * open.width + x1 + 1) * 3],
              &patch.pixels.rgb[static_cast<size_t>(y - y0) * patch.pixels.width * 3]);
  for (const EyeLid& e : eyes) paintLid(e, &patch);
  return patch;
}

std::unique_ptr<PreparedFace> prepareFace(const FaceTexture& f) {
  auto p = std::make_unique<PreparedFace>();
  p->open.rgb = f.rgb;
  p->open.width = f.width;
  p->open.height = f.height;
  p->closed = closeEyes(p->open, f.landmarks);
  const PointF* lm = f.landmarks;
  double lx = 0, ly = 0, rx = 0, ry = 0;
  for (int i = 36; i < 42; ++i) { lx += lm[i].x / 6; ly += lm[i].y / 6; }
  for (int i = 42; i < 48; ++i) { rx += lm[i].x / 6; ry += lm[i].y / 6; }
  double d = std::max(4.0, std::hypot(rx - lx, ry - ly));
  p->ox = (lx + rx) / 2;
  p->oy = (ly + ry) / 2;
  p->ex = (rx - lx) / d;
  p->ey = (ry - ly) / d;
  p->mmPerPx = kEyeDistanceMm / d;
  auto face = [&](const PointF& q, double* x, double* y) { p->toFace(q.x, q.y, x, y); };
  double x, y, y2;
  face(lm[30], &p->noseX, &p->noseY);
  face(lm[27], &p->bridgeX, &p->bridgeY);
  face(lm[62], &x, &y);
  face(lm[66], &x, &y2);
  p->mouthY = (y + y2) / 2;
  face(lm[8], &x, &p->chinY);
  double jl, jr;
  face(lm[0], &jl, &y);
  face(lm[16], &jr, &y);
  face(lm[19], &x, &y);
  face(lm[24], &x, &y2);
  p->browY = (y + y2) / 2;
  // Keep the shape plausible even when the landmarks of a photo are poor.
  p->noseY = std::clamp(p->noseY, 30.0, 62.0);
  p->bridgeY = std::clamp(p->bridgeY, -5.0, p->noseY - 20);
  p->noseX = std::clamp(p->noseX, -12.0, 12.0);
  p->bridgeX = std::clamp(p->bridgeX, -6.0, 6.0);
  p->mouthY = std::clamp(p->mouthY, p->noseY + 15, p->noseY + 45);
  p->chinY = std::clamp(p->chinY, p->mouthY + 25, p->mouthY + 60);
  p->halfW = std::clamp((jr - jl) / 2, 58.0, 82.0);
  p->browY = std::clamp(p->browY, -35.0, -12.0);
  p->topY = -p->chinY * 0.98;

  // Head height field on a 3 mm grid.
  const double step = 3;
  int nx = static_cast<int>(2 * 90 / step) + 1, ny = static_cast<int>((p->chinY + 10 - p->topY) / step) + 1;
  std::vector<int> index(static_cast<size_t>(nx) * ny, -1);
  for (int j = 0; j < ny; ++j) {
    for (int i = 0; i < nx; ++i) {
      double fx = -90 + i * step, fy = p->topY + j * step;
      bool inside = false;
      double h = p->height(fx, fy, &inside);
      if (!inside) continue;
      bool a, b;
      double hx = p->height(fx + 0.5, fy, &a) - p->height(fx - 0.5, fy, &b);
      double hy = p->height(fx, fy + 0.5, &a) - p->height(fx, fy - 0.5, &b);
      index[static_cast<size_t>(j) * nx + i] = static_cast<int>(p->headPos.size());
      p->headPos.push_back({fx, fy, h});
      p->headNormal.push_back(normalized({-hx, -hy, 1}));
      double u, v;
      p->toPhoto(fx, fy, &u, &v);
      p->headU.push_back(u);
      p->headV.push_back(v);
    }
  }
  for (int j = 0; j + 1 < ny; ++j)
    for (int i = 0; i + 1 < nx; ++i) {
      int a = index[static_cast<size_t>(j) * nx + i], b = index[static_cast<size_t>(j) * nx + i + 1];
      int c = index[static_cast<size_t>(j + 1) * nx + i], e = index[static_cast<size_t>(j + 1) * nx + i + 1];
      if (a >= 0 && b >= 0 && c >= 0) p->headTris.insert(p->headTris.end(), {a, b, c});
      if (b >= 0 && e >= 0 && c >= 0) p->headTris.insert(p->headTris.end(), {b, e, c});
    }

  // Neck (front half of a cylinder) and shoulders (a plane): plain skin and clothing colours, so that no
  // other face of the photo shows up below the head.
  {
    float skin[3] = {0, 0, 0};
    int n = 0;
    for (int side : {3, 13}) {
      PointF q{(lm[side].x + lm[side == 3 ? 31 : 35].x) / 2, (lm[side].y + lm[side == 3 ? 31 : 35].y) / 2};
      int qx = std::clamp(static_cast<int>(q.x), 0, f.width - 1), qy = std::clamp(static_cast<int>(q.y), 0, f.height - 1);
      for (int c = 0; c < 3; ++c) skin[c] += f.rgb[(static_cast<size_t>(qy) * f.width + qx) * 3 + c];
      ++n;
    }
    Rng rng(static_cast<uint64_t>(f.width) * 7919 + f.height);
    p->body.width = p->body.height = 2;
    p->body.rgb.resize(12);
    for (int c = 0; c < 3; ++c) {
      uint8_t s8 = static_cast<uint8_t>(skin[c] / n * 0.92f);
      uint8_t cloth = static_cast<uint8_t>(rng.uniform(20, 230));
      p->body.rgb[c] = p->body.rgb[3 + c] = s8;
      p->body.rgb[6 + c] = p->body.rgb[9 + c] = cloth;
    }
  }
  double neckR = 0.55 * p->halfW, neckAxis = 80;
  int rows = 0;
  const int cols = 21;
  for (double ny2 = p->chinY - 30; ny2 <= p->chinY + 70; ny2 += 5, ++rows) {
    for (int i = 0; i < cols; ++i) {
      double th = (-95 + 190.0 * i / (cols - 1)) * kPi / 180;
      double nx2 = neckR * std::sin(th), nz = -(neckAxis - neckR * std::cos(th));
      p->bodyPos.push_back({nx2, ny2, nz});
      p->bodyNormal.push_back({std::sin(th), 0, std::cos(th)});
      p->bodyU.push_back(0.5);
      p->bodyV.push_back(0);
    }
  }
  for (int j = 0; j + 1 < rows; ++j)
    for (int i = 0; i + 1 < cols; ++i) {
      int a = j * cols + i;
      p->bodyTris.insert(p->bodyTris.end(), {a, a + 1, a + cols, a + 1, a + cols + 1, a + cols});
    }
  int base = static_cast<int>(p->bodyPos.size());
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 2; ++i) {
      double bx = i ? 240 : -240, by = p->chinY + (j ? 480 : 55);
      p->bodyPos.push_back({bx, by, -110});
      p->bodyNormal.push_back({0, -0.3, 1});
      p->bodyU.push_back(0.5);
      p->bodyV.push_back(1);
    }
  p->bodyTris.insert(p->bodyTris.end(), {base, base + 1, base + 2, base + 1, base + 3, base + 2});
  return p;
}

Texture makeWall(uint64_t seed) {
  Rng rng(seed);
  Texture t;
  t.width = 256;
  t.height = 192;
  t.rgb.resize(static_cast<size_t>(t.width) * t.height * 3);
  double base[3], grad[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = rng.uniform(90, 200);
    grad[c] = rng.uniform(-40, 40);
  }
  for (int y = 0; y < t.height; ++y)
    for (int x = 0; x < t.width; ++x)
      for (int c = 0; c < 3; ++c)
        t.rgb[(static_cast<size_t>(y) * t.width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(base[c] + grad[c] * y / t.height + rng.normal() * 3, 0.0, 255.0));
  // A few rectangles: doors, pictures, furniture.
  int rects = 2 + static_cast<int>(rng.uniform() * 5);
  for (int r = 0; r < rects; ++r) {
    int x0 = static_cast<int>(rng.uniform(0, t.width)), y0 = static_cast<int>(rng.uniform(0, t.height));
    int w = static_cast<int>(rng.uniform(10, 90)), h = static_cast<int>(rng.uniform(10, 90));
    double col[3];
    for (double& c : col) c = rng.uniform(20, 235);
    for (int y = y0; y < std::min(t.height, y0 + h); ++y)
      for (int x = x0; x < std::min(t.width, x0 + w); ++x)
        for (int c = 0; c < 3; ++c) t.rgb[(static_cast<size_t>(y) * t.width + x) * 3 + c] = static_cast<uint8_t>(col[c]);
  }
  return t;
}

struct Motion {
  double amp[6] = {0, 0, 0, 0, 0, 0};  // x, y, z (mm), yaw, pitch, roll (degrees)
  double freq[6] = {0, 0, 0, 0, 0, 0};
  double phase[6] = {0, 0, 0, 0, 0, 0};
  void draw(Rng& rng, double mm, double deg) {
    for (int i = 0; i < 6; ++i) {
      amp[i] = (i < 3 ? mm : deg) * rng.uniform(0.3, 1.0);
      freq[i] = rng.uniform(0.15, 0.9);
      phase[i] = rng.uniform(0, 2 * kPi);
    }
  }
  double at(int i, double t) const { return amp[i] * std::sin(2 * kPi * freq[i] * t + phase[i]); }
};

}  // namespace

struct Presentation {
  SceneKind kind = SceneKind::None;
  uint64_t seed = 0;
  int wall = 0;
  double wallZ = 2000;
  Vec3 light{0, 0, -1};
  SensorParams sensor;
  // Head (live person, or the attacker behind a cut-out).
  bool head = false;
  int face = 0;
  double size = 1, D = 600, tx = 0, ty = 0, yaw = 0, pitch = 0, roll = 0;
  Motion headMotion;
  std::vector<double> blinks;
  double blinkDuration = 0.15;
  // Sheet: print or screen.
  bool sheet = false, screen = false, cutout = false;
  int sheetFace = 0;
  double printScale = 1;                 // face size on the sheet relative to life size
  double cropLeft = -80, cropRight = 80, cropTop = -110, cropBottom = 150;  // content, face mm of the photo
  double sheetLeft = -90, sheetRight = 90, sheetTop = -120, sheetBottom = 160;  // sheet, sheet mm (face origin 0)
  double sD = 600, sTx = 0, sTy = 0, sYaw = 0, sPitch = 0, sRoll = 0;
  double sag = 0;
  bool bendVertical = true;
  double gap = 10;                       // cut-out: sheet distance in front of the nose tip
  double holeX = 16, holeY = 9;          // cut-out: eye hole semi-axes, face mm of the printed face
  Motion sheetMotion;
  float gain[3] = {1, 1, 1}, offset[3] = {0, 0, 0};
  float moire = 0, moireFx = 0, moireFy = 0;
  double glareU = 0, glareV = 0, glareR = 0, glareGain = 0;  // screens, sheet mm
  double holeU = 0, holeV = 0, holeR = 0;                    // screens: depth hole, sheet mm
};

}  // namespace synth

using synth::Motion;
using synth::Presentation;
using synth::PreparedFace;
using synth::normalized;

SceneRenderer::SceneRenderer(std::vector<std::shared_ptr<const FaceTexture>> faces, int width, int height,
                             CameraIntrinsics intrinsics)
    : width_(width), height_(height), intrinsics_(intrinsics) {
  // Each photo crop is let go once prepared (its copy lives on in the prepared face), so that a caller
  // that handed over the last reference never holds two copies of every texture.
  for (auto& f : faces) {
    if (f && f->width > 8 && f->height > 8) faces_.push_back(synth::prepareFace(*f));
    f.reset();
  }
  for (int i = 0; i < 6; ++i) walls_.push_back(synth::makeWall(1000 + i));
  current_ = std::make_unique<Presentation>();
}

SceneRenderer::~SceneRenderer() = default;

void SceneRenderer::begin(SceneKind kind, uint64_t seed) {
  Rng rng(seed);
  auto p = std::make_unique<Presentation>();
  p->kind = kind;
  p->seed = seed;
  p->wall = static_cast<int>(rng.uniform() * walls_.size());
  p->wallZ = rng.uniform(1500, 3200);
  p->light = normalized({rng.uniform(-0.6, 0.6), rng.uniform(-0.5, 0.3), -1});
  p->sensor.exposure = static_cast<float>(rng.uniform(0.8, 1.15));
  for (float& w : p->sensor.whiteBalance) w = static_cast<float>(rng.uniform(0.94, 1.06));
  p->sensor.colourNoise = static_cast<float>(rng.uniform(1.5, 4));
  p->sensor.depthNoiseScale = static_cast<float>(rng.uniform(0.8, 1.5));
  p->sensor.dropout = static_cast<float>(rng.uniform(0.002, 0.012));
  const int nFaces = static_cast<int>(faces_.size());
  auto pickFace = [&]() { return nFaces ? static_cast<int>(rng.uniform() * nFaces) % nFaces : 0; };
  // Places the face at distance D with an offset that keeps it well inside the image.
  auto place = [&](double D, double* tx, double* ty) {
    double halfW = D * (width_ / 2.0) / intrinsics_.fx, halfH = D * (height_ / 2.0) / intrinsics_.fy;
    *tx = rng.uniform(-0.35, 0.35) * halfW;
    *ty = rng.uniform(-0.3, 0.15) * halfH;
  };
  auto blinkSchedule = [&](Presentation& q) {
    q.blinkDuration = rng.uniform(0.1, 0.22);
    for (double t = rng.uniform(0.2, 2.5); t < 600; t += rng.uniform(1.5, 5)) q.blinks.push_back(t);
  };
  auto printLook = [&](Presentation& q) {
    double contrast = rng.uniform(0.78, 0.95);
    double warm = rng.uniform(0, 0.06);
    for (int c = 0; c < 3; ++c) {
      q.gain[c] = static_cast<float>(contrast * (c == 0 ? 1 + warm : c == 2 ? 1 - warm : 1));
      q.offset[c] = static_cast<float>(rng.uniform(10, 30));
    }
  };
  auto sheetAround = [&](Presentation& q, double scale, double marginMm) {
    // Content: the photo around the face, in the photo's face mm; the sheet adds a paper margin.
    double w = rng.uniform(150, 230);
    q.cropLeft = -w / 2;
    q.cropRight = w / 2;
    q.cropTop = -w * rng.uniform(0.55, 0.75);
    q.cropBottom = w * rng.uniform(0.75, 1.0);
    q.printScale = scale;
    q.sheetLeft = q.cropLeft * scale - marginMm;
    q.sheetRight = q.cropRight * scale + marginMm;
    q.sheetTop = q.cropTop * scale - marginMm;
    q.sheetBottom = q.cropBottom * scale + marginMm;
  };

  switch (kind) {
    case SceneKind::None:
    case SceneKind::Unplug:
      break;
    case SceneKind::Live:
    case SceneKind::CutoutEyes: {
      p->head = true;
      p->face = pickFace();
      p->size = rng.uniform(0.9, 1.1);
      p->D = rng.uniform(450, 1000);
      place(p->D, &p->tx, &p->ty);
      p->yaw = rng.uniform(-20, 20);
      p->pitch = rng.uniform(-12, 12);
      p->roll = rng.uniform(-10, 10);
      p->headMotion.draw(rng, rng.uniform(2, 8), rng.uniform(0.5, 3));
      blinkSchedule(*p);
      if (kind == SceneKind::CutoutEyes) {
        p->sheet = p->cutout = true;
        p->sheetFace = rng.chance(0.3) ? p->face : pickFace();
        p->yaw *= 0.5;
        p->pitch *= 0.5;
        p->gap = rng.uniform(0, 25);
        p->holeX = rng.uniform(13, 19);
        p->holeY = rng.uniform(7, 11);
        p->sag = rng.chance(0.5) ? rng.uniform(0, 15) : 0;
        p->bendVertical = true;
        sheetAround(*p, 1.0, rng.uniform(0, 10));  // printScale is recomputed per frame to align the eyes
        printLook(*p);
      }
      break;
    }
    case SceneKind::Print:
    case SceneKind::PrintTilted:
    case SceneKind::PrintBent:
    case SceneKind::PhotoSmall:
    case SceneKind::PhotoLarge:
    case SceneKind::ScreenPhone:
    case SceneKind::ScreenTablet: {
      p->sheet = true;
      p->sheetFace = pickFace();
      double scale = rng.uniform(0.85, 1.15);
      // Mostly within the depth sensor's range (>= 400 mm); a few closer, where it has no depth at all.
      double dmin = 420, dmax = 950;
      if (kind == SceneKind::PhotoSmall) { scale = rng.uniform(0.3, 0.65); dmin = 420; dmax = 700; }
      if (kind == SceneKind::PhotoLarge) { scale = rng.uniform(1.5, 2.6); dmin = 700; dmax = 1600; }
      p->sD = rng.chance(0.05) ? rng.uniform(250, 420) : rng.uniform(dmin, dmax);
      place(p->sD, &p->sTx, &p->sTy);
      p->sYaw = rng.uniform(-6, 6);
      p->sPitch = rng.uniform(-6, 6);
      p->sRoll = rng.uniform(-8, 8);
      if (kind == SceneKind::PrintTilted) {
        p->sYaw = (rng.chance(0.5) ? 1 : -1) * rng.uniform(15, 40);
        p->sPitch = (rng.chance(0.5) ? 1 : -1) * rng.uniform(0, 30);
      }
      if (kind == SceneKind::PrintBent) {
        p->sag = (rng.chance(0.75) ? 1 : -1) * rng.uniform(8, 40);
        p->bendVertical = rng.chance(0.7);
        p->sYaw = rng.uniform(-15, 15);
      }
      bool handHeld = rng.chance(0.7);
      p->sheetMotion.draw(rng, handHeld ? rng.uniform(1, 5) : 0, handHeld ? rng.uniform(0.3, 2) : 0);
      if (kind == SceneKind::ScreenPhone || kind == SceneKind::ScreenTablet) {
        p->screen = true;
        bool phone = kind == SceneKind::ScreenPhone;
        bool portrait = phone || rng.chance(0.5);
        double dispW = phone ? rng.uniform(58, 72) : (portrait ? rng.uniform(135, 170) : rng.uniform(190, 240));
        double dispH = phone ? dispW * rng.uniform(1.9, 2.2) : (portrait ? dispW * 1.33 : dispW * 0.72);
        double faceScale = phone ? dispW * rng.uniform(0.75, 1.0) / 150 : rng.uniform(0.7, 1.05);
        if (phone) { p->sD = rng.uniform(400, 650); place(p->sD, &p->sTx, &p->sTy); }
        p->printScale = faceScale;
        p->cropLeft = -dispW / 2 / faceScale;
        p->cropRight = dispW / 2 / faceScale;
        double up = rng.uniform(0.35, 0.5);
        p->cropTop = -dispH * up / faceScale;
        p->cropBottom = dispH * (1 - up) / faceScale;
        double bezel = phone ? rng.uniform(3, 8) : rng.uniform(8, 20);
        p->sheetLeft = -dispW / 2 - bezel;
        p->sheetRight = dispW / 2 + bezel;
        p->sheetTop = p->cropTop * faceScale - bezel;
        p->sheetBottom = p->cropBottom * faceScale + bezel * (phone ? 2 : 1);
        double bright = rng.uniform(1.0, 1.3), blue = rng.uniform(0, 0.1);
        p->gain[0] = static_cast<float>(bright * (1 - blue));
        p->gain[1] = static_cast<float>(bright);
        p->gain[2] = static_cast<float>(bright * (1 + blue));
        for (float& o : p->offset) o = static_cast<float>(rng.uniform(0, 12));
        p->moire = static_cast<float>(rng.uniform(0.02, 0.08));
        double ang = rng.uniform(0, kPi), fr = rng.uniform(0.6, 2.2);
        p->moireFx = static_cast<float>(fr * std::cos(ang));
        p->moireFy = static_cast<float>(fr * std::sin(ang));
        if (rng.chance(0.6)) {
          p->glareU = rng.uniform(-dispW / 2, dispW / 2);
          p->glareV = rng.uniform(p->sheetTop, p->sheetBottom);
          p->glareR = rng.uniform(8, 30);
          p->glareGain = rng.uniform(0.15, 0.5);
        }
        if (rng.chance(0.5)) {  // glossy glass: part of the screen without depth
          p->holeU = rng.uniform(-dispW / 3, dispW / 3);
          p->holeV = rng.uniform(p->sheetTop / 2, p->sheetBottom / 2);
          p->holeR = rng.uniform(0.1, 0.5) * dispW;
          p->sensor.screenHoleFraction = static_cast<float>(rng.uniform(0, 0.5));
        }
      } else {
        sheetAround(*p, scale, rng.uniform(0, 15));
        printLook(*p);
      }
      break;
    }
  }
  current_ = std::move(p);
}

void SceneRenderer::render(double t, uint64_t frameSeed, CameraFrame* frame) {
  const Presentation& p = *current_;
  const CameraIntrinsics& k = intrinsics_;
  // Background wall: rendered once per presentation, copied per frame.
  if (wallCache_.width != width_ || wallCache_.height != height_ || wallSeed_ != p.seed) {
    wallCache_.reset(width_, height_);
    Mesh wall;
    wall.texture = &walls_[p.wall];
    wall.material = synth::Material::Wall;
    wall.clampTexture = true;
    double z = p.wallZ, hw = z * 0.75 * width_ / k.fx, hh = z * 0.75 * height_ / k.fy;
    const synth::Texture& wt = walls_[p.wall];
    wall.vertices = {{{-hw, -hh, z}, 0, 0, 1}, {{hw, -hh, z}, wt.width - 1.0, 0, 1},
                     {{-hw, hh, z}, 0, wt.height - 1.0, 1}, {{hw, hh, z}, wt.width - 1.0, wt.height - 1.0, 1}};
    wall.triangles = {0, 1, 2, 1, 3, 2};
    synth::rasterise(wall, k, &wallCache_);
    wallSeed_ = p.seed;
  }
  buffers_ = wallCache_;

  // Head pose at t; headToCam maps face coordinates (z toward the camera) into camera coordinates.
  Mat3 headR;
  Vec3 pivotLocal, pivotCam;
  const PreparedFace* hf = p.head && !faces_.empty() ? faces_[p.face].get() : nullptr;
  auto headToCam = [&](const Vec3& q) {
    Vec3 local{q.x * p.size, q.y * p.size, -q.z * p.size};
    return headR * (local - pivotLocal) + pivotCam;
  };
  if (hf) {
    const Motion& m = p.headMotion;
    headR = Mat3::rotation(p.yaw + m.at(3, t), p.pitch + m.at(4, t), p.roll + m.at(5, t));
    pivotLocal = {0, hf->noseY * 0.5 * p.size, 85 * p.size};
    pivotCam = {p.tx + m.at(0, t), p.ty + m.at(1, t), p.D + 85 * p.size + m.at(2, t)};
    bool closed = false;
    for (double b : p.blinks) {
      if (b > t) break;
      if (t < b + p.blinkDuration) closed = true;
    }
    auto build = [&](const std::vector<Vec3>& pos, const std::vector<Vec3>& nrm, const std::vector<double>& u,
                     const std::vector<double>& v, const std::vector<int>& tris, synth::Material mat) {
      Mesh mesh;
      mesh.texture = mat == synth::Material::Body ? &hf->body : &hf->open;
      if (closed && mat != synth::Material::Body) mesh.patch = &hf->closed;
      mesh.clampTexture = true;
      mesh.material = mat;
      mesh.vertices.resize(pos.size());
      for (size_t i = 0; i < pos.size(); ++i) {
        Vec3 n = headR * Vec3{nrm[i].x, nrm[i].y, -nrm[i].z};
        double lambert = std::max(0.0, dot(n, p.light));
        mesh.vertices[i] = {headToCam(pos[i]), u[i], v[i], static_cast<float>(0.72 + 0.33 * lambert)};
      }
      mesh.triangles = tris;
      synth::rasterise(mesh, k, &buffers_);
    };
    build(hf->bodyPos, hf->bodyNormal, hf->bodyU, hf->bodyV, hf->bodyTris, synth::Material::Body);
    build(hf->headPos, hf->headNormal, hf->headU, hf->headV, hf->headTris, synth::Material::Skin);
  }

  synth::SensorParams sensor = p.sensor;
  if (p.sheet && !faces_.empty()) {
    const PreparedFace* sf = faces_[p.sheetFace].get();
    Mat3 R;
    Vec3 origin;
    double scale = p.printScale;
    if (p.cutout && hf) {
      // Held against the attacker's face: the printed eyes over the real eyes, just in front of the nose.
      bool in;
      Vec3 eyes = headToCam({0, 0, hf->height(0, 0, &in)});
      Vec3 nose = headToCam({hf->noseX, hf->noseY, hf->height(hf->noseX, hf->noseY, &in)});
      double zs = nose.z - p.gap;
      origin = eyes * (zs / eyes.z);
      scale = p.size * zs / eyes.z;
      const Motion& m = p.headMotion;
      R = Mat3::rotation(p.yaw + m.at(3, t), p.pitch + m.at(4, t), p.roll + m.at(5, t));
    } else {
      const Motion& m = p.sheetMotion;
      R = Mat3::rotation(p.sYaw + m.at(3, t), p.sPitch + m.at(4, t), p.sRoll + m.at(5, t));
      origin = {p.sTx + m.at(0, t), p.sTy + m.at(1, t), p.sD + m.at(2, t)};
    }
    double sl = p.cutout ? p.cropLeft * scale : p.sheetLeft, sr = p.cutout ? p.cropRight * scale : p.sheetRight;
    double st = p.cutout ? p.cropTop * scale : p.sheetTop, sb = p.cutout ? p.cropBottom * scale : p.sheetBottom;
    const int n = 28;
    Mesh mesh;
    mesh.texture = &sf->open;
    mesh.material = p.screen ? synth::Material::Screen : synth::Material::Paper;
    const uint8_t paper[3] = {238, 236, 228}, bezel[3] = {14, 14, 16};
    std::copy(p.screen ? bezel : paper, (p.screen ? bezel : paper) + 3, mesh.border);
    std::copy(p.gain, p.gain + 3, mesh.gain);
    std::copy(p.offset, p.offset + 3, mesh.offset);
    mesh.moire = p.moire;
    mesh.moireFx = p.moireFx;
    mesh.moireFy = p.moireFy;
    double halfSpan = p.bendVertical ? (sr - sl) / 2 : (sb - st) / 2;
    double mid = p.bendVertical ? (sr + sl) / 2 : (sb + st) / 2;
    for (int j = 0; j <= n; ++j) {
      for (int i = 0; i <= n; ++i) {
        double su = sl + (sr - sl) * i / n, sv = st + (sb - st) * j / n;
        double c = ((p.bendVertical ? su : sv) - mid) / halfSpan;
        double zb = p.sag * (1 - c * c);  // toward the camera
        // Slope of the bend gives the normal for the paper's shading.
        double dz = -2 * p.sag * c / halfSpan;
        Vec3 nl = normalized(p.bendVertical ? Vec3{-dz, 0, 1} : Vec3{0, -dz, 1});
        Vec3 pos = R * Vec3{su, sv, -zb} + origin;
        Vec3 nc = R * Vec3{nl.x, nl.y, -nl.z};
        double lambert = std::max(0.0, dot(nc, p.light));
        // Texture: sheet mm -> printed face mm -> photo pixels; outside the content the border colour.
        double fx = su / scale, fy = sv / scale;
        double u, v;
        sf->toPhoto(fx, fy, &u, &v);
        float shade = p.screen ? 1.0f : static_cast<float>(0.75 + 0.3 * lambert);
        mesh.vertices.push_back({pos, u, v, shade});
      }
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        int a = j * (n + 1) + i;
        mesh.triangles.insert(mesh.triangles.end(), {a, a + 1, a + n + 1, a + 1, a + n + 2, a + n + 1});
      }
    const double cl = p.cropLeft, cr = p.cropRight, ct = p.cropTop, cb = p.cropBottom;
    const bool cutout = p.cutout;
    const double hx = p.holeX, hy = p.holeY;
    // Content pass: fragments outside the printed content are left to the border pass; cut-out eye
    // holes show what is behind the sheet.
    Mesh contentMesh = mesh;
    contentMesh.hole = [sf, cl, cr, ct, cb, cutout, hx, hy](double u, double v) {
      double x, y;
      sf->toFace(u, v, &x, &y);
      if (x < cl || x > cr || y < ct || y > cb) return true;  // not content: drawn by the border pass
      if (cutout) {
        double ex = (std::fabs(x) - kEyeDistanceMm / 2) / hx, ey = (y + 1) / hy;
        if (ex * ex + ey * ey < 1) return true;
      }
      return false;
    };
    // Border pass: the whole sheet in the border colour (a 1-pixel texture of it), behind the content
    // by a hair so the content wins the depth test where both exist.
    synth::Texture borderTex;
    borderTex.width = borderTex.height = 2;
    borderTex.rgb.assign(12, 0);
    for (int i = 0; i < 4; ++i) std::copy(mesh.border, mesh.border + 3, &borderTex.rgb[i * 3]);
    Mesh borderMesh = mesh;
    borderMesh.hole = [sf, cutout, hx, hy](double u, double v) {
      if (!cutout) return false;
      double x, y;
      sf->toFace(u, v, &x, &y);
      double ex = (std::fabs(x) - kEyeDistanceMm / 2) / hx, ey = (y + 1) / hy;
      return ex * ex + ey * ey < 1;
    };
    borderMesh.texture = &borderTex;
    borderMesh.clampTexture = true;
    borderMesh.moire = 0;
    for (auto& vtx : borderMesh.vertices) vtx.p.z += 0.05;
    if (!p.screen) for (int c = 0; c < 3; ++c) { borderMesh.gain[c] = 1; borderMesh.offset[c] = 0; }
    synth::rasterise(borderMesh, k, &buffers_);
    synth::rasterise(contentMesh, k, &buffers_);

    if (p.screen) {
      auto project = [&](double su, double sv, double* x, double* y) {
        Vec3 q = R * Vec3{su, sv, 0} + origin;
        *x = k.fx * q.x / q.z + k.cx;
        *y = k.fy * q.y / q.z + k.cy;
        return q.z;
      };
      double z;
      if (p.glareGain > 0) {
        z = project(p.glareU, p.glareV, &sensor.glareX, &sensor.glareY);
        sensor.glareR = p.glareR * k.fx / z;
        sensor.glareGain = p.glareGain;
      }
      if (p.holeR > 0) {
        z = project(p.holeU, p.holeV, &sensor.screenHoleCx, &sensor.screenHoleCy);
        sensor.screenHoleR = p.holeR * k.fx / z;
      }
    }
  }

  sensor.infrared = infrared_;
  Rng rng(frameSeed);
  synth::applySensor(buffers_, k, sensor, rng, frame);
}

// ---- The camera ---------------------------------------------------------------------------------------

SyntheticCamera::SyntheticCamera(SyntheticOptions options) : options_(std::move(options)) {
  if (options_.scenario.empty()) options_.scenario.push_back({SceneKind::Live, 3600});
  if (!(options_.fps > 0)) options_.fps = 30;
  uint64_t f = 0;
  for (const ScenarioItem& item : options_.scenario) {
    segmentStart_.push_back(f);
    f += std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(item.seconds * options_.fps)));
  }
  cycleFrames_ = f;
  renderer_ = std::make_unique<SceneRenderer>(std::move(options_.faces), options_.width, options_.height, options_.intrinsics);
  renderer_->setInfrared(options_.infrared);
  options_.faces.clear();
}

SyntheticCamera::~SyntheticCamera() = default;

bool SyntheticCamera::segmentAt(uint64_t frame, size_t* item, int64_t* presentation, uint64_t* startFrame) const {
  uint64_t cycle = frame / cycleFrames_;
  if (cycle > 0 && !options_.loop) return false;
  uint64_t inCycle = frame % cycleFrames_;
  size_t i = static_cast<size_t>(std::upper_bound(segmentStart_.begin(), segmentStart_.end(), inCycle) - segmentStart_.begin()) - 1;
  *item = i;
  *presentation = static_cast<int64_t>(cycle * options_.scenario.size() + i);
  *startFrame = cycle * cycleFrames_ + segmentStart_[i];
  return true;
}

Result SyntheticCamera::open() {
  closed_ = false;
  if (startUs_ == 0) startUs_ = steadyMicros();
  if (renderer_->faceCount() == 0)
    return Result::fail(Status::CameraNotConnected, "the synthetic camera has no face texture");
  size_t item;
  int64_t presentation;
  uint64_t start;
  if (!segmentAt(frameIndex_, &item, &presentation, &start)) {
    ended_ = true;
    return Result::fail(Status::CameraNotConnected, "the synthetic scenario has ended");
  }
  if (options_.scenario[item].kind == SceneKind::Unplug) {
    // Still unplugged: in realtime the time passes by itself; lossless sources skip ahead.
    if (options_.realtime) {
      double elapsed = (steadyMicros() - startUs_) / 1e6;
      frameIndex_ = std::max(frameIndex_, static_cast<uint64_t>(elapsed * options_.fps));
    } else {
      ++frameIndex_;
    }
    return Result::fail(Status::CameraNotConnected, "synthetic camera unplugged (scenario)");
  }
  return {};
}

Result SyntheticCamera::read(CameraFrame* frame) {
  if (closed_) return Result::fail(Status::CameraNotConnected, "synthetic camera closed");
  if (options_.realtime) {
    // Paced at fps; a slow consumer skips frames (the scene time follows the wall clock).
    for (;;) {
      if (closed_) return Result::fail(Status::CameraNotConnected, "synthetic camera closed");
      int64_t due = startUs_ + static_cast<int64_t>(frameIndex_ * 1e6 / options_.fps);
      int64_t wait = due - steadyMicros();
      if (wait <= 0) {
        uint64_t now = static_cast<uint64_t>((steadyMicros() - startUs_) * options_.fps / 1e6);
        if (now > frameIndex_ + 1) frameIndex_ = now;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(wait, 20000)));
    }
  }
  size_t item;
  int64_t presentation;
  uint64_t start;
  if (!segmentAt(frameIndex_, &item, &presentation, &start)) {
    ended_ = true;
    return Result::fail(Status::CameraNotConnected, "the synthetic scenario has ended");
  }
  const ScenarioItem& it = options_.scenario[item];
  uint64_t seed = synth::mixSeed(options_.seed, static_cast<uint64_t>(presentation));
  if (it.kind == SceneKind::Unplug) {
    ++frameIndex_;
    return Result::fail(Status::CameraNotConnected, "synthetic camera unplugged (scenario)");
  }
  if (presentation != shownPresentation_) {
    renderer_->begin(it.kind, seed);
    shownPresentation_ = presentation;
  }
  double t = (frameIndex_ - start) / options_.fps;
  renderer_->render(t, synth::mixSeed(seed, frameIndex_ + 77), frame);
  frame->sequence = sequence_++;
  frame->timestampUs = options_.realtime ? startUs_ + static_cast<int64_t>(frameIndex_ * 1e6 / options_.fps)
                                         : static_cast<int64_t>(frameIndex_ * 1e6 / options_.fps);
  frame->truth.kind = sceneKindName(it.kind);
  frame->truth.presentation = presentation;
  frame->truth.seed = seed;
  ++frameIndex_;
  return {};
}

}  // namespace facecheck
