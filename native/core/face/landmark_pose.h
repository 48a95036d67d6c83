// Head pose from the 68 landmarks by geometry: measured against the fr_pose model on mirrored and
// rotated photos (bench:quality), it is both more consistent and free, so the engine uses it.
#pragma once

#include "core/face/face_types.h"

namespace facecheck {

// Fills face->yaw, pitch, roll (degrees) from face->landmarks. Positive yaw: the face turns towards the
// image's left; positive roll: clockwise in the image; positive pitch: looking up.
void estimatePose(FaceResult* face);

}  // namespace facecheck
