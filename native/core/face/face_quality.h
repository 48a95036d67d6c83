// Image-quality measures of one face, computed on the aligned 112x112 crop (so they do not depend on
// the photo's resolution) and on the landmarks.
#pragma once

#include <cstdint>

#include "core/face/face_types.h"

namespace facecheck {

// Fills brightness, sharpness, mouthOpenness and sunglasses. `aligned` is the 112x112 RGB crop.
void measureQuality(const uint8_t* aligned, FaceResult* face);

}  // namespace facecheck
