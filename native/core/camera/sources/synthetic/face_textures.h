// Faces of a still photo as textures for the synthetic camera: the engine finds the faces, and only those
// it can render convincingly (large enough, near frontal, eyes open) are cropped out with their landmarks.
#pragma once

#include <memory>
#include <vector>

#include "core/camera/sources/synthetic/synthetic_camera.h"
#include "core/face/face_engine.h"
#include "core/face/face_types.h"

namespace facecheck {

// Roughly frontal (yaw within about 25 degrees, roll within 20) and both eyes open, from the landmarks'
// geometry alone.
bool looksFrontalWithOpenEyes(const FaceResult& face);

// A photo's interleaved RGB pixels, owned elsewhere (the addon keeps the JavaScript array alive meanwhile).
struct PhotoView {
  const uint8_t* rgb = nullptr;
  int width = 0, height = 0;
  size_t bytes() const { return static_cast<size_t>(width) * height * 3; }
};

// Appends a texture for each usable face of `photo` (eyes at least 30 px apart, no sunglasses, near
// frontal, eyes open). A photo the engine cannot analyse adds nothing.
void findFaceTextures(FaceEngine& engine, const PhotoView& photo, std::vector<std::shared_ptr<const FaceTexture>>* out);

}  // namespace facecheck
