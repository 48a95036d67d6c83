#include "core/face/similarity_transform.h"

#include <cmath>

namespace facecheck {

const PointF kAlignTemplate112[5] = {
    {38.2946f, 51.6963f}, {73.5318f, 51.5014f}, {56.0252f, 71.7366f}, {41.5493f, 92.3655f}, {70.7299f, 92.2041f}};

Affine estimateSimilarity(const PointF* from, const PointF* to, int count) {
  double fx = 0, fy = 0, tx = 0, ty = 0;
  for (int i = 0; i < count; ++i) {
    fx += from[i].x; fy += from[i].y;
    tx += to[i].x; ty += to[i].y;
  }
  fx /= count; fy /= count; tx /= count; ty /= count;
  // With complex numbers z = x + iy the best similarity is w = sum(conj(f) t) / sum(|f|^2).
  double num_re = 0, num_im = 0, den = 0;
  for (int i = 0; i < count; ++i) {
    double ax = from[i].x - fx, ay = from[i].y - fy;
    double bx = to[i].x - tx, by = to[i].y - ty;
    num_re += ax * bx + ay * by;
    num_im += ax * by - ay * bx;
    den += ax * ax + ay * ay;
  }
  Affine m;
  if (den <= 0) return m;
  double a = num_re / den, b = num_im / den;  // scale*cos, scale*sin
  m.a = a; m.b = -b; m.d = b; m.e = a;
  m.c = tx - (a * fx - b * fy);
  m.f = ty - (b * fx + a * fy);
  return m;
}

}  // namespace facecheck
