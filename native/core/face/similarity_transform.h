// Least-squares similarity transform (rotation, uniform scale, translation) between point sets:
// Umeyama's closed form in 2-D. Used to align the 5 face points to the 112x112 template.
#pragma once

#include "core/face/image_ops.h"

namespace facecheck {

struct PointF {
  float x = 0;
  float y = 0;
};

// The similarity that maps `from[i]` onto `to[i]` best in the least-squares sense.
Affine estimateSimilarity(const PointF* from, const PointF* to, int count);

// The standard 112x112 five-point template (eyes, nose tip, mouth corners) of ArcFace-style models.
extern const PointF kAlignTemplate112[5];

}  // namespace facecheck
