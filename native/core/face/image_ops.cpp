#include "core/face/image_ops.h"

#include <algorithm>
#include <cmath>

namespace facecheck {

double Affine::scale() const { return std::sqrt(std::fabs(a * e - b * d)); }

Affine Affine::inverse() const {
  double det = a * e - b * d;
  if (det == 0) return Affine{};
  Affine r;
  r.a = e / det;
  r.b = -b / det;
  r.d = -d / det;
  r.e = a / det;
  r.c = -(r.a * c + r.b * f);
  r.f = -(r.d * c + r.e * f);
  return r;
}

void Affine::apply(double x, double y, double* sx, double* sy) const {
  *sx = a * x + b * y + c;
  *sy = d * x + e * y + f;
}

Affine rectToSize(double x, double y, double w, double h, int dstW, int dstH) {
  // Pixel edges, not centres, are matched: destination pixel i covers source [x + i*sx, x + (i+1)*sx).
  Affine m;
  m.a = w / dstW;
  m.b = 0;
  m.c = x + 0.5 * m.a - 0.5;
  m.d = 0;
  m.e = h / dstH;
  m.f = y + 0.5 * m.e - 0.5;
  return m;
}

void ImagePyramid::reset(const ImageView& base) {
  levels_[0] = base;
  built_ = 1;
}

const ImageView& ImagePyramid::levelFor(double scale, int* factor) {
  // Halve while the remaining scale is at least 2, so bilinear sampling never skips source pixels.
  std::lock_guard<std::mutex> lock(mutex_);
  size_t level = 0;
  int f = 1;
  while (scale >= 2.0 * f && level + 1 < kMaxLevels && levels_[level].width >= 4 && levels_[level].height >= 4) {
    if (level + 1 >= built_) {
      const ImageView& src = levels_[level];
      int w = src.width / 2, h = src.height / 2;
      std::vector<uint8_t>& buf = storage_[level + 1];
      buf.resize(static_cast<size_t>(w) * h * 3);
      const size_t srcStride = static_cast<size_t>(src.width) * 3;
      for (int y = 0; y < h; ++y) {
        const uint8_t* r0 = src.data + (2 * y) * srcStride;
        const uint8_t* r1 = r0 + srcStride;
        uint8_t* o = buf.data() + static_cast<size_t>(y) * w * 3;
        for (int x = 0; x < w; ++x) {
          for (int c = 0; c < 3; ++c) {
            int s = r0[6 * x + c] + r0[6 * x + 3 + c] + r1[6 * x + c] + r1[6 * x + 3 + c];
            o[3 * x + c] = static_cast<uint8_t>((s + 2) >> 2);
          }
        }
      }
      levels_[level + 1] = ImageView{buf.data(), w, h};
      built_ = level + 2;
    }
    ++level;
    f *= 2;
  }
  *factor = f;
  return levels_[level];
}

namespace {

// Samples the RGB value at (sx, sy) of `img`; returns false when the point lies outside the image.
inline bool sampleRgb(const ImageView& img, double sx, double sy, float rgb[3]) {
  if (sx < -0.5 || sy < -0.5 || sx > img.width - 0.5 || sy > img.height - 0.5) return false;
  sx = std::min(std::max(sx, 0.0), img.width - 1.0);
  sy = std::min(std::max(sy, 0.0), img.height - 1.0);
  int x0 = static_cast<int>(sx), y0 = static_cast<int>(sy);
  int x1 = std::min(x0 + 1, img.width - 1), y1 = std::min(y0 + 1, img.height - 1);
  float fx = static_cast<float>(sx - x0), fy = static_cast<float>(sy - y0);
  const size_t stride = static_cast<size_t>(img.width) * 3;
  const uint8_t* p00 = img.data + y0 * stride + x0 * 3;
  const uint8_t* p01 = img.data + y0 * stride + x1 * 3;
  const uint8_t* p10 = img.data + y1 * stride + x0 * 3;
  const uint8_t* p11 = img.data + y1 * stride + x1 * 3;
  for (int c = 0; c < 3; ++c) {
    float top = p00[c] + (p01[c] - p00[c]) * fx;
    float bottom = p10[c] + (p11[c] - p10[c]) * fx;
    rgb[c] = top + (bottom - top) * fy;
  }
  return true;
}

// Rewrites a level-0 mapping for a level that is `factor` times smaller.
Affine toLevel(const Affine& m, int factor) {
  if (factor == 1) return m;
  double k = 1.0 / factor, off = 0.5 * k - 0.5;
  Affine r = m;
  r.a *= k; r.b *= k; r.c = m.c * k + off;
  r.d *= k; r.e *= k; r.f = m.f * k + off;
  return r;
}

// One axis of an axis-aligned mapping: the two source indices, the weight and whether the position lies
// in the image, computed as sampleRgb computes them.
struct AxisTap {
  int i0, i1;
  float f;
  bool inside;
};

inline AxisTap axisTap(double s, int size) {
  AxisTap t;
  t.inside = !(s < -0.5 || s > size - 0.5);
  s = std::min(std::max(s, 0.0), size - 1.0);
  t.i0 = static_cast<int>(s);
  t.i1 = std::min(t.i0 + 1, size - 1);
  t.f = static_cast<float>(s - t.i0);
  return t;
}

constexpr int kMaxSeparableWidth = 1024;

// Crops and letterboxes (no rotation): the same samples as the general loop, with the column positions
// worked out once per call instead of once per pixel (the detector's input is all such samples).
template <typename Write>
void warpAxisAligned(const ImageView& img, const Affine& m, int dstW, int dstH, bool mirror, Write write) {
  AxisTap columns[kMaxSeparableWidth];
  for (int x = 0; x < dstW; ++x) columns[x] = axisTap(m.a * (mirror ? dstW - 1 - x : x) + m.c, img.width);
  const size_t stride = static_cast<size_t>(img.width) * 3;
  float rgb[3];
  for (int y = 0; y < dstH; ++y) {
    const AxisTap row = axisTap(m.e * y + m.f, img.height);
    const uint8_t* r0 = img.data + row.i0 * stride;
    const uint8_t* r1 = img.data + row.i1 * stride;
    for (int x = 0; x < dstW; ++x) {
      const AxisTap& col = columns[x];
      if (!row.inside || !col.inside) {
        write(x, y, nullptr);
        continue;
      }
      const uint8_t *p00 = r0 + col.i0 * 3, *p01 = r0 + col.i1 * 3, *p10 = r1 + col.i0 * 3, *p11 = r1 + col.i1 * 3;
      if (row.f == 0 && col.f == 0) {  // on a source pixel (a 2:1 letterbox of 640x480): the same value, no blend
        for (int c = 0; c < 3; ++c) rgb[c] = p00[c];
        write(x, y, rgb);
        continue;
      }
      for (int c = 0; c < 3; ++c) {
        float top = p00[c] + (p01[c] - p00[c]) * col.f;
        float bottom = p10[c] + (p11[c] - p10[c]) * col.f;
        rgb[c] = top + (bottom - top) * row.f;
      }
      write(x, y, rgb);
    }
  }
}

template <typename Write>
void warp(ImagePyramid& pyramid, const Affine& dstToSrc, int dstW, int dstH, bool mirror, Write write) {
  int factor = 1;
  const ImageView& img = pyramid.levelFor(dstToSrc.scale(), &factor);
  Affine m = toLevel(dstToSrc, factor);
  if (m.b == 0 && m.d == 0 && dstW <= kMaxSeparableWidth) {
    warpAxisAligned(img, m, dstW, dstH, mirror, write);
    return;
  }
  float rgb[3];
  for (int y = 0; y < dstH; ++y) {
    for (int x = 0; x < dstW; ++x) {
      double sx, sy;
      m.apply(mirror ? dstW - 1 - x : x, y, &sx, &sy);
      write(x, y, sampleRgb(img, sx, sy, rgb) ? rgb : nullptr);
    }
  }
}

}  // namespace

void warpToTensor(ImagePyramid& pyramid, const Affine& dstToSrc, int dstW, int dstH, const TensorNorm& norm,
                  float* out, bool mirror) {
  const size_t plane = static_cast<size_t>(dstW) * dstH;
  float scale[3], bias[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / norm.std[c];
    bias[c] = -norm.mean[c] / norm.std[c];
  }
  if (norm.order == ChannelOrder::Grey) {
    warp(pyramid, dstToSrc, dstW, dstH, mirror, [&](int x, int y, const float* rgb) {
      float luma = rgb ? 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2] : norm.mean[0];
      out[static_cast<size_t>(y) * dstW + x] = luma * scale[0] + bias[0];
    });
    return;
  }
  const bool bgr = norm.order == ChannelOrder::BGR;
  warp(pyramid, dstToSrc, dstW, dstH, mirror, [&](int x, int y, const float* rgb) {
    size_t i = static_cast<size_t>(y) * dstW + x;
    for (int c = 0; c < 3; ++c) {
      int plane_index = bgr ? 2 - c : c;
      float v = rgb ? rgb[c] : norm.mean[plane_index];
      out[plane_index * plane + i] = v * scale[plane_index] + bias[plane_index];
    }
  });
}

void warpToRgb(ImagePyramid& pyramid, const Affine& dstToSrc, int dstW, int dstH, uint8_t* out) {
  warp(pyramid, dstToSrc, dstW, dstH, false, [&](int x, int y, const float* rgb) {
    uint8_t* o = out + (static_cast<size_t>(y) * dstW + x) * 3;
    for (int c = 0; c < 3; ++c) o[c] = rgb ? static_cast<uint8_t>(std::lround(std::min(255.f, rgb[c]))) : 0;
  });
}

void rgbToGrey(const uint8_t* rgb, int width, int height, float* grey) {
  const size_t n = static_cast<size_t>(width) * height;
  for (size_t i = 0; i < n; ++i)
    grey[i] = 0.299f * rgb[3 * i] + 0.587f * rgb[3 * i + 1] + 0.114f * rgb[3 * i + 2];
}

double meanOver(const float* grey, int width, int height, int x0, int y0, int x1, int y1) {
  x0 = std::max(0, x0); y0 = std::max(0, y0);
  x1 = std::min(width, x1); y1 = std::min(height, y1);
  if (x1 <= x0 || y1 <= y0) return 0;
  double sum = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) sum += grey[static_cast<size_t>(y) * width + x];
  return sum / (static_cast<double>(x1 - x0) * (y1 - y0));
}

double laplacianVariance(const float* grey, int width, int height) {
  if (width < 3 || height < 3) return 0;
  double sum = 0, sumSq = 0;
  size_t n = 0;
  for (int y = 1; y < height - 1; ++y) {
    const float* row = grey + static_cast<size_t>(y) * width;
    for (int x = 1; x < width - 1; ++x) {
      double l = row[x - 1] + row[x + 1] + row[x - width] + row[x + width] - 4.0 * row[x];
      sum += l;
      sumSq += l * l;
      ++n;
    }
  }
  double mean = sum / n;
  return sumSq / n - mean * mean;
}

}  // namespace facecheck
