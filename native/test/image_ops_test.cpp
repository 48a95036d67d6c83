// Checks the resampling in core/face/image_ops.cpp against a plain per-pixel reference written here from its
// documented rules (pixel-centre coordinates, halving pyramid for scales >= 2, bilinear taps clamped to the
// image, outside = mean / black). Every value must be bit-identical: the axis-aligned fast path (crops,
// letterbox) must give exactly what the general affine path gives. Prints one line per case; exits 1 on a
// mismatch. Built and run by test/image/image-ops.test.ts.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/face/image_ops.h"

using namespace facecheck;

namespace {

struct Image {
  int width, height;
  std::vector<uint8_t> rgb;
};

// The pyramid level for a sampling scale: halve (2x2 box, rounded) while the scale is at least 2x the factor.
Image levelFor(const Image& base, double scale, int* factor) {
  Image level = base;
  int f = 1;
  while (scale >= 2.0 * f && level.width >= 4 && level.height >= 4) {
    Image half{level.width / 2, level.height / 2, {}};
    half.rgb.resize(static_cast<size_t>(half.width) * half.height * 3);
    for (int y = 0; y < half.height; ++y)
      for (int x = 0; x < half.width; ++x)
        for (int c = 0; c < 3; ++c) {
          auto at = [&](int xx, int yy) { return level.rgb[(static_cast<size_t>(yy) * level.width + xx) * 3 + c]; };
          int s = at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1);
          half.rgb[(static_cast<size_t>(y) * half.width + x) * 3 + c] = static_cast<uint8_t>((s + 2) >> 2);
        }
    level = half;
    f *= 2;
  }
  *factor = f;
  return level;
}

// One destination pixel: false outside the image, else the bilinear RGB value.
bool sample(const Image& img, double sx, double sy, float rgb[3]) {
  if (sx < -0.5 || sy < -0.5 || sx > img.width - 0.5 || sy > img.height - 0.5) return false;
  sx = std::min(std::max(sx, 0.0), img.width - 1.0);
  sy = std::min(std::max(sy, 0.0), img.height - 1.0);
  int x0 = static_cast<int>(sx), y0 = static_cast<int>(sy);
  int x1 = std::min(x0 + 1, img.width - 1), y1 = std::min(y0 + 1, img.height - 1);
  float fx = static_cast<float>(sx - x0), fy = static_cast<float>(sy - y0);
  auto px = [&](int x, int y, int c) { return img.rgb[(static_cast<size_t>(y) * img.width + x) * 3 + c]; };
  for (int c = 0; c < 3; ++c) {
    float top = px(x0, y0, c) + (px(x1, y0, c) - px(x0, y0, c)) * fx;
    float bottom = px(x0, y1, c) + (px(x1, y1, c) - px(x0, y1, c)) * fx;
    rgb[c] = top + (bottom - top) * fy;
  }
  return true;
}

// Reference NCHW tensor (or interleaved bytes when `bytes`), from the rules above.
void reference(const Image& base, const Affine& m0, int w, int h, const TensorNorm& norm, bool mirror,
               std::vector<float>* tensor, std::vector<uint8_t>* bytes) {
  int factor = 1;
  Image img = levelFor(base, m0.scale(), &factor);
  Affine m = m0;
  if (factor > 1) {
    double k = 1.0 / factor, off = 0.5 * k - 0.5;
    m.a *= k; m.b *= k; m.c = m0.c * k + off;
    m.d *= k; m.e *= k; m.f = m0.f * k + off;
  }
  const size_t plane = static_cast<size_t>(w) * h;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double sx, sy;
      m.apply(mirror ? w - 1 - x : x, y, &sx, &sy);
      float rgb[3];
      bool inside = sample(img, sx, sy, rgb);
      size_t i = static_cast<size_t>(y) * w + x;
      if (bytes) {
        for (int c = 0; c < 3; ++c)
          (*bytes)[i * 3 + c] = inside ? static_cast<uint8_t>(std::lround(std::min(255.f, rgb[c]))) : 0;
      } else if (norm.order == ChannelOrder::Grey) {
        float luma = inside ? 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2] : norm.mean[0];
        (*tensor)[i] = luma * (1.0f / norm.std[0]) + (-norm.mean[0] / norm.std[0]);
      } else {
        for (int c = 0; c < 3; ++c) {
          int p = norm.order == ChannelOrder::BGR ? 2 - c : c;
          float v = inside ? rgb[c] : norm.mean[p];
          (*tensor)[p * plane + i] = v * (1.0f / norm.std[p]) + (-norm.mean[p] / norm.std[p]);
        }
      }
    }
}

int failures = 0;

void check(const char* name, const Image& base, const Affine& m, int w, int h, const TensorNorm& norm, bool mirror) {
  ImagePyramid pyramid;
  pyramid.reset(ImageView{base.rgb.data(), base.width, base.height});
  const int planes = norm.order == ChannelOrder::Grey ? 1 : 3;
  std::vector<float> got(static_cast<size_t>(w) * h * planes), want(got.size());
  warpToTensor(pyramid, m, w, h, norm, got.data(), mirror);
  reference(base, m, w, h, norm, mirror, &want, nullptr);
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  std::vector<uint8_t> gotRgb(static_cast<size_t>(w) * h * 3), wantRgb(gotRgb.size());
  warpToRgb(pyramid, m, w, h, gotRgb.data());
  reference(base, m, w, h, norm, false, nullptr, &wantRgb);
  differ += gotRgb != wantRgb;
  std::printf("%s %s: %zu values differ\n", differ ? "FAIL" : "ok", name, differ);
  if (differ) ++failures;
}

Image noise(int w, int h, unsigned seed) {
  Image img{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  std::mt19937 rng(seed);
  for (auto& v : img.rgb) v = static_cast<uint8_t>(rng() & 255);
  return img;
}

}  // namespace

int main() {
  const Image vga = noise(640, 480, 1), odd = noise(333, 251, 2);
  const TensorNorm rgb{ChannelOrder::RGB, {127, 127, 127}, {128, 128, 128}};
  const TensorNorm bgr{ChannelOrder::BGR, {1, 2, 3}, {4, 5, 6}};
  const TensorNorm grey{ChannelOrder::Grey, {0, 0, 0}, {255, 255, 255}};
  // Axis-aligned (the separable path): the detector's 2:1 letterbox, on source pixels
  check("letterbox 640x480 -> 320x240", vga, rectToSize(0, 0, 640, 480, 320, 240), 320, 240, rgb, false);
  // letterbox with borders (a 4:3 frame of a portrait-ish image) and a non-integer scale
  check("letterbox 333x251 with borders", odd, rectToSize(-55.5, 0, 444, 333, 320, 240), 320, 240, rgb, false);
  // face crops partly outside the image, BGR and grey, mirrored, upscaled and downscaled
  check("crop outside, BGR, mirrored", vga, rectToSize(-20.5, 300.2, 190, 190, 64, 64), 64, 64, bgr, true);
  check("crop grey 24x24 upscaled", odd, rectToSize(100.25, 80.75, 13.3, 13.3, 24, 24), 24, 24, grey, false);
  check("crop 128x128 downscaled 3.3x", vga, rectToSize(100.3, 50.7, 422.4, 422.4, 128, 128), 128, 128, bgr, false);
  // General affine path (the 5-point alignment): rotation and scale
  Affine rot;
  const double angle = 0.3, s = 1.7;
  rot.a = s * std::cos(angle); rot.b = -s * std::sin(angle); rot.c = 250;
  rot.d = s * std::sin(angle); rot.e = s * std::cos(angle); rot.f = 120;
  check("rotated 112x112 alignment", vga, rot, 112, 112, bgr, false);
  check("rotated 112x112 alignment, mirrored", vga, rot, 112, 112, bgr, true);
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
