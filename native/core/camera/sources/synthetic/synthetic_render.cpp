#include "core/camera/sources/synthetic/synthetic_render.h"

#include <algorithm>
#include <cmath>

#include "core/camera/recording.h"

namespace facecheck::synth {

namespace {
constexpr double kPi = 3.14159265358979323846;

// 65536 standard normal values (inverse CDF on a regular grid), so one 32-bit draw gives two normals.
const float* normalTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (int i = 0; i < 65536; ++i) {
      double p = (i + 0.5) / 65536.0;
      // Acklam's rational approximation of the inverse normal CDF.
      static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
      static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
      static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
      static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
      double q, r, x;
      if (p < 0.02425) {
        q = std::sqrt(-2 * std::log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
      } else if (p > 1 - 0.02425) {
        q = std::sqrt(-2 * std::log(1 - p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
      } else {
        q = p - 0.5;
        r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
      }
      t[i] = static_cast<float>(x);
    }
    return t;
  }();
  return table.data();
}

inline float clamp255(float v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

// Millimetres -> millimetres after the 11-bit disparity quantisation of a Kinect-like sensor.
const uint16_t* quantisedMm() {
  static const std::vector<uint16_t> lut = [] {
    std::vector<uint16_t> t(8192);
    for (int mm = 0; mm < 8192; ++mm) t[mm] = kinectRawToMm(kinectMmToRaw(static_cast<uint16_t>(mm)));
    return t;
  }();
  return lut.data();
}
}  // namespace

Mat3 Mat3::rotation(double yawDeg, double pitchDeg, double rollDeg) {
  double y = yawDeg * kPi / 180, p = pitchDeg * kPi / 180, r = rollDeg * kPi / 180;
  double cy = std::cos(y), sy = std::sin(y), cp = std::cos(p), sp = std::sin(p), cr = std::cos(r), sr = std::sin(r);
  // R = Ry(yaw) * Rx(pitch) * Rz(roll)
  Mat3 ry{{cy, 0, sy, 0, 1, 0, -sy, 0, cy}};
  Mat3 rx{{1, 0, 0, 0, cp, -sp, 0, sp, cp}};
  Mat3 rz{{cr, -sr, 0, sr, cr, 0, 0, 0, 1}};
  auto mul = [](const Mat3& a, const Mat3& b) {
    Mat3 o;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) o.m[3 * i + j] = a.m[3 * i] * b.m[j] + a.m[3 * i + 1] * b.m[3 + j] + a.m[3 * i + 2] * b.m[6 + j];
    return o;
  };
  return mul(ry, mul(rx, rz));
}

uint64_t mixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  uint64_t a = mixSeed(seed, 1), b = mixSeed(seed, 2);
  s_[0] = static_cast<uint32_t>(a) | 1;
  s_[1] = static_cast<uint32_t>(a >> 32);
  s_[2] = static_cast<uint32_t>(b);
  s_[3] = static_cast<uint32_t>(b >> 32);
}

uint32_t Rng::next() {
  uint32_t result = s_[0] + s_[3];
  uint32_t t = s_[1] << 9;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = (s_[3] << 11) | (s_[3] >> 21);
  return result;
}

double Rng::normal() { return normalTable()[next() >> 16]; }

namespace {
// Bilinear sample of a width x height texture whose pixel (x, y) is pixel(x, y); Texture::sample's rules.
template <typename PixelAt>
void bilinear(int width, int height, PixelAt pixel, double u, double v, const uint8_t* border, float out[3]) {
  if (!border) {
    u = std::clamp(u, 0.0, width - 1.0);
    v = std::clamp(v, 0.0, height - 1.0);
  } else if (u < 0 || v < 0 || u > width - 1 || v > height - 1) {
    out[0] = border[0];
    out[1] = border[1];
    out[2] = border[2];
    return;
  }
  int x0 = static_cast<int>(u), y0 = static_cast<int>(v);
  int x1 = std::min(x0 + 1, width - 1), y1 = std::min(y0 + 1, height - 1);
  float fx = static_cast<float>(u - x0), fy = static_cast<float>(v - y0);
  const uint8_t* p00 = pixel(x0, y0);
  const uint8_t* p01 = pixel(x1, y0);
  const uint8_t* p10 = pixel(x0, y1);
  const uint8_t* p11 = pixel(x1, y1);
  for (int c = 0; c < 3; ++c) {
    float top = p00[c] + (p01[c] - p00[c]) * fx;
    float bottom = p10[c] + (p11[c] - p10[c]) * fx;
    out[c] = top + (bottom - top) * fy;
  }
}
}  // namespace

void Texture::sample(double u, double v, const uint8_t* border, float out[3]) const {
  bilinear(width, height, [this](int x, int y) { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }, u, v,
           border, out);
}

void samplePatched(const Texture& base, const TexturePatch& patch, double u, double v, const uint8_t* border,
                   float out[3]) {
  auto pixel = [&](int x, int y) {
    if (patch.covers(x, y))
      return &patch.pixels.rgb[(static_cast<size_t>(y - patch.y) * patch.pixels.width + (x - patch.x)) * 3];
    return &base.rgb[(static_cast<size_t>(y) * base.width + x) * 3];
  };
  bilinear(base.width, base.height, pixel, u, v, border, out);
}

void RenderBuffers::reset(int w, int h) {
  width = w;
  height = h;
  z.assign(static_cast<size_t>(w) * h, 0.0f);
  colour.assign(static_cast<size_t>(w) * h * 3, 0.0f);
  material.assign(static_cast<size_t>(w) * h, Material::None);
}

void rasterise(const Mesh& mesh, const CameraIntrinsics& k, RenderBuffers* buf) {
  const Texture* tex = mesh.texture;
  if (!tex || tex->width < 2) return;
  const int W = buf->width, H = buf->height;
  struct P {
    double x, y, iz, uz, vz, sz;
  };
  std::vector<P> proj(mesh.vertices.size());
  for (size_t i = 0; i < mesh.vertices.size(); ++i) {
    const Vertex& v = mesh.vertices[i];
    if (v.p.z < 50) {
      proj[i].iz = -1;
      continue;
    }
    double iz = 1.0 / v.p.z;
    proj[i] = P{k.fx * v.p.x * iz + k.cx, k.fy * v.p.y * iz + k.cy, iz, v.u * iz, v.v * iz, v.shade * iz};
  }
  const uint8_t* border = mesh.clampTexture ? nullptr : mesh.border;
  for (size_t t = 0; t + 2 < mesh.triangles.size(); t += 3) {
    const P& a = proj[mesh.triangles[t]];
    const P& b = proj[mesh.triangles[t + 1]];
    const P& c = proj[mesh.triangles[t + 2]];
    if (a.iz < 0 || b.iz < 0 || c.iz < 0) continue;
    double area = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
    if (std::fabs(area) < 1e-9) continue;
    double inv = 1.0 / area;
    int x0 = std::max(0, static_cast<int>(std::ceil(std::min({a.x, b.x, c.x}))));
    int x1 = std::min(W - 1, static_cast<int>(std::floor(std::max({a.x, b.x, c.x}))));
    int y0 = std::max(0, static_cast<int>(std::ceil(std::min({a.y, b.y, c.y}))));
    int y1 = std::min(H - 1, static_cast<int>(std::floor(std::max({a.y, b.y, c.y}))));
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        double w0 = ((b.x - x) * (c.y - y) - (b.y - y) * (c.x - x)) * inv;
        double w1 = ((c.x - x) * (a.y - y) - (c.y - y) * (a.x - x)) * inv;
        double w2 = 1 - w0 - w1;
        if (w0 < -1e-9 || w1 < -1e-9 || w2 < -1e-9) continue;
        double iz = w0 * a.iz + w1 * b.iz + w2 * c.iz;
        float z = static_cast<float>(1.0 / iz);
        size_t idx = static_cast<size_t>(y) * W + x;
        if (buf->z[idx] != 0 && buf->z[idx] <= z) continue;
        double u = (w0 * a.uz + w1 * b.uz + w2 * c.uz) / iz;
        double v = (w0 * a.vz + w1 * b.vz + w2 * c.vz) / iz;
        if (mesh.hole && mesh.hole(u, v)) continue;
        float shade = static_cast<float>((w0 * a.sz + w1 * b.sz + w2 * c.sz) / iz);
        float rgb[3];
        if (mesh.patch) samplePatched(*tex, *mesh.patch, u, v, border, rgb);
        else tex->sample(u, v, border, rgb);
        float m = 1;
        if (mesh.moire > 0) m = 1 + mesh.moire * static_cast<float>(std::sin(mesh.moireFx * x + mesh.moireFy * y));
        for (int ch = 0; ch < 3; ++ch)
          buf->colour[idx * 3 + ch] = (rgb[ch] * mesh.gain[ch] + mesh.offset[ch]) * shade * m;
        buf->z[idx] = z;
        buf->material[idx] = mesh.material;
      }
    }
  }
}

namespace {

// Share of the projector's near-infrared light a surface sends back to the imager beside it. Skin and
// paper are diffuse and bright in the near infrared (printed ink darkens paper less than in visible
// light); a screen's glass reflects the projector away like a mirror and its display emits no infrared,
// so a phone or tablet looks dark whatever it shows.
float infraredReflectance(Material m, float luminance) {
  switch (m) {
    case Material::Skin: return 0.45f + 0.25f * luminance;
    case Material::Paper: return 0.35f + 0.4f * luminance;
    case Material::Screen: return 0.03f;
    case Material::Body: return 0.4f;
    case Material::Wall: return 0.45f;
    default: return 0;
  }
}

// The active-infrared image of a stereo depth camera's left imager: each surface lit by the projector
// (irradiance falling with the square of the distance) through its dot pattern, the imager's automatic
// exposure putting the bright end of the scene near the top of its range, and read noise. Registered to
// the colour grid like the depth.
void renderInfrared(const RenderBuffers& buf, Rng& rng, CameraFrame* frame) {
  const int W = buf.width, H = buf.height;
  const size_t N = static_cast<size_t>(W) * H;
  std::vector<float> level(N, 0);
  std::vector<float> lit;
  lit.reserve(N / 16 + 1);
  for (size_t i = 0; i < N; ++i) {
    const float z = buf.z[i];
    if (z <= 0) continue;
    const float* c = &buf.colour[i * 3];
    const float luminance = (0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]) / 255.0f;
    const float metres = z / 1000.0f;
    level[i] = infraredReflectance(buf.material[i], luminance) / (metres * metres);
    if (i % 16 == 0) lit.push_back(level[i]);
  }
  // Exposure: the brightest surfaces (the nearest, a face in front of the camera) just below saturation
  // with their dots.
  float bright = 1;
  if (!lit.empty()) {
    auto at = lit.begin() + static_cast<long>(lit.size() * 99 / 100);
    std::nth_element(lit.begin(), at, lit.end());
    bright = std::max(1e-6f, *at);
  }
  const float gain = 150.0f / bright;
  const float* table = normalTable();
  frame->ir.assign(N, 1);  // beyond the projector's reach: the darkest level that still counts as measured
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const size_t i = static_cast<size_t>(y) * W + x;
      if (level[i] <= 0) continue;
      // The projector's fixed pseudo-random dots, about one pixel in eight lit brighter, scattered back by
      // diffuse surfaces; glass sends them away, so a screen shows only its faint diffuse glow.
      const uint32_t h = (static_cast<uint32_t>(x) * 73856093u) ^ (static_cast<uint32_t>(y) * 19349663u);
      const bool mirror = buf.material[i] == Material::Screen;
      const float dot = mirror ? 1.0f : ((h % 8u) == 0 ? 1.6f : 0.9f);
      const float noise = table[rng.next() >> 16] * 2.0f;
      frame->ir[i] = static_cast<uint8_t>(std::max(1.0f, clamp255(level[i] * gain * dot + noise)) + 0.5f);
    }
}

}  // namespace

void applySensor(const RenderBuffers& buf, const CameraIntrinsics& k, const SensorParams& sp, Rng& rng,
                 CameraFrame* frame) {
  const int W = buf.width, H = buf.height;
  const size_t N = static_cast<size_t>(W) * H;
  const float* table = normalTable();
  frame->width = W;
  frame->height = H;
  frame->intrinsics = k;

  // ---- colour: optics blur [1 2 1]^2, exposure and white balance, glare, noise.
  std::vector<float> tmp(N * 3);
  for (int y = 0; y < H; ++y) {
    const float* row = &buf.colour[static_cast<size_t>(y) * W * 3];
    float* out = &tmp[static_cast<size_t>(y) * W * 3];
    for (int x = 0; x < W; ++x) {
      int xl = x > 0 ? x - 1 : x, xr = x < W - 1 ? x + 1 : x;
      for (int c = 0; c < 3; ++c) out[3 * x + c] = 0.25f * row[3 * xl + c] + 0.5f * row[3 * x + c] + 0.25f * row[3 * xr + c];
    }
  }
  frame->rgb.resize(N * 3);
  const float gain[3] = {sp.exposure * sp.whiteBalance[0], sp.exposure * sp.whiteBalance[1],
                         sp.exposure * sp.whiteBalance[2]};
  for (int y = 0; y < H; ++y) {
    int yu = y > 0 ? y - 1 : y, yd = y < H - 1 ? y + 1 : y;
    const float* ru = &tmp[static_cast<size_t>(yu) * W * 3];
    const float* rc = &tmp[static_cast<size_t>(y) * W * 3];
    const float* rd = &tmp[static_cast<size_t>(yd) * W * 3];
    uint8_t* out = &frame->rgb[static_cast<size_t>(y) * W * 3];
    for (int x = 0; x < W; ++x) {
      float glare = 0;
      if (sp.glareGain > 0 && buf.material[static_cast<size_t>(y) * W + x] == Material::Screen) {
        double dx = x - sp.glareX, dy = y - sp.glareY;
        glare = static_cast<float>(sp.glareGain * 255 * std::exp(-(dx * dx + dy * dy) / (2 * sp.glareR * sp.glareR)));
      }
      uint32_t r = rng.next();
      float noise[3] = {table[(r & 0x3ff) << 6 | 32] * sp.colourNoise, table[((r >> 10) & 0x3ff) << 6 | 32] * sp.colourNoise,
                        table[((r >> 20) & 0x3ff) << 6 | 32] * sp.colourNoise};
      for (int c = 0; c < 3; ++c) {
        float v = 0.25f * ru[3 * x + c] + 0.5f * rc[3 * x + c] + 0.25f * rd[3 * x + c];
        out[3 * x + c] = static_cast<uint8_t>(clamp255(v * gain[c] + glare + noise[c]) + 0.5f);
      }
    }
  }

  // ---- depth.
  const uint16_t* quant = quantisedMm();
  frame->depth.assign(N, 0);
  std::vector<float> z(buf.z);
  // Projector shadow: where a nearer surface starts (scanning left to right), the farther surface just
  // left of it is hidden from the IR projector (75 mm baseline), so it has no measurement.
  for (int y = 0; y < H; ++y) {
    float* row = &z[static_cast<size_t>(y) * W];
    for (int x = 1; x < W; ++x) {
      float far = buf.z[static_cast<size_t>(y) * W + x - 1], near = buf.z[static_cast<size_t>(y) * W + x];
      if (far > 0 && near > 0 && far - near > 40) {
        int width = static_cast<int>(0.5 * k.fx * 75.0 * (1.0 / near - 1.0 / far));
        for (int i = std::max(0, x - width); i < x; ++i)
          if (row[i] > near + 20) row[i] = 0;
      }
    }
  }
  // Low-frequency correlated error field (16x16 pixel cells), bilinearly interpolated.
  const int gw = W / 16 + 2, gh = H / 16 + 2;
  std::vector<float> field(static_cast<size_t>(gw) * gh);
  for (float& f : field) f = static_cast<float>(rng.normal());
  for (int y = 0; y < H; ++y) {
    double gy = y / 16.0;
    int iy = static_cast<int>(gy);
    float fy = static_cast<float>(gy - iy);
    for (int x = 0; x < W; ++x) {
      size_t idx = static_cast<size_t>(y) * W + x;
      float zz = z[idx];
      if (zz <= 0) continue;
      // Mixed pixels at depth edges lose their measurement half of the time.
      float zr = x + 1 < W ? buf.z[idx + 1] : zz, zd = y + 1 < H ? buf.z[idx + W] : zz;
      float zl = x > 0 ? buf.z[idx - 1] : zz, zu = y > 0 ? buf.z[idx - W] : zz;
      float edge = std::max({std::fabs(zr - zz), std::fabs(zd - zz), std::fabs(zl - zz), std::fabs(zu - zz)});
      if (edge > 40 && (rng.next() & 1)) continue;
      Material m = buf.material[idx];
      double drop = sp.dropout;
      if (m == Material::Skin) {
        const float* c = &buf.colour[idx * 3];
        if (c[0] + c[1] + c[2] < 3 * 45) drop += 0.25;  // dark hair absorbs the projector pattern
      }
      if (m == Material::Screen && sp.screenHoleR > 0) {
        double dx = x - sp.screenHoleCx, dy = y - sp.screenHoleCy;
        if (dx * dx + dy * dy < sp.screenHoleR * sp.screenHoleR) continue;
        drop += sp.screenHoleFraction * 0.2;
      }
      if (drop > 0 && rng.uniform() < drop) continue;
      double gx = x / 16.0;
      int ix = static_cast<int>(gx);
      float fx = static_cast<float>(gx - ix);
      const float* f0 = &field[static_cast<size_t>(iy) * gw + ix];
      const float* f1 = f0 + gw;
      float corr = (f0[0] * (1 - fx) + f0[1] * fx) * (1 - fy) + (f1[0] * (1 - fx) + f1[1] * fx) * fy;
      // Kinect-like random error: grows with the square of the distance.
      double sigma = sp.depthNoiseScale * (0.4 + 1.2e-6 * zz * zz);
      double noisy = zz + sigma * (table[rng.next() >> 16] + 0.6 * corr);
      if (noisy < 400 || noisy > 4500) continue;
      // Disparity quantisation of an 11-bit structured-light sensor.
      frame->depth[idx] = quant[static_cast<int>(noisy + 0.5)];
    }
  }
  if (sp.infrared) renderInfrared(buf, rng, frame);
  else frame->ir.clear();
}

}  // namespace facecheck::synth
