// Image preprocessing for the models: an RGB image pyramid (so large photos are reduced without
// aliasing), affine resampling into NCHW float tensors or RGB crops, and simple region statistics.
// Coordinates are in pixel-centre units: pixel (i, j) has its centre at (i, j).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace facecheck {

struct ImageView {
  const uint8_t* data = nullptr;  // interleaved RGB
  int width = 0;
  int height = 0;
};

// Maps a destination pixel (x, y) to source coordinates: sx = a*x + b*y + c, sy = d*x + e*y + f.
struct Affine {
  double a = 1, b = 0, c = 0, d = 0, e = 1, f = 0;
  double scale() const;  // source pixels per destination pixel
  Affine inverse() const;
  void apply(double x, double y, double* sx, double* sy) const;
};

// Maps the axis-aligned source rectangle (x, y, w, h) onto a dstW x dstH destination.
Affine rectToSize(double x, double y, double w, double h, int dstW, int dstH);

enum class ChannelOrder { RGB, BGR, Grey };

struct TensorNorm {
  ChannelOrder order = ChannelOrder::RGB;
  float mean[3] = {0, 0, 0};
  float std[3] = {1, 1, 1};
};

// Halving levels of one image, built on demand and kept in caller-owned storage so that a reused
// workspace allocates nothing once it has seen an image of the same size. Several threads may sample
// one pyramid at once: building a level is serialised, and built levels never move.
class ImagePyramid {
 public:
  void reset(const ImageView& base);
  // The level whose resolution suits a sampling scale (source px per destination px), with the level's
  // factor (1, 2, 4, ...).
  const ImageView& levelFor(double scale, int* factor);
  const ImageView& base() const { return levels_[0]; }

 private:
  static constexpr size_t kMaxLevels = 24;
  std::array<ImageView, kMaxLevels> levels_;
  std::array<std::vector<uint8_t>, kMaxLevels> storage_;
  size_t built_ = 0;
  std::mutex mutex_;
};

// Bilinear resampling of `pyramid` through `dstToSrc` (source = level 0 coordinates) into an NCHW tensor
// (3 planes, or 1 for Grey). Outside the image the tensor gets the mean (normalised 0).
// `mirror` flips the destination horizontally.
void warpToTensor(ImagePyramid& pyramid, const Affine& dstToSrc, int dstW, int dstH, const TensorNorm& norm,
                  float* out, bool mirror = false);

// The same into interleaved RGB bytes; outside the image is black.
void warpToRgb(ImagePyramid& pyramid, const Affine& dstToSrc, int dstW, int dstH, uint8_t* out);

// Luma (0..255) of an interleaved RGB buffer into `grey`.
void rgbToGrey(const uint8_t* rgb, int width, int height, float* grey);

// Mean of a grey image over the rectangle [x0, x1) x [y0, y1) (clipped).
double meanOver(const float* grey, int width, int height, int x0, int y0, int x1, int y1);

// Variance of the 4-neighbour Laplacian over the interior of a grey image.
double laplacianVariance(const float* grey, int width, int height);

}  // namespace facecheck
