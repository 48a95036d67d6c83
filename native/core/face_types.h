// What the engine computes for one face.
#pragma once

#include <cstdint>
#include <vector>

#include "core/similarity_transform.h"

namespace facecheck {

struct FaceBox {
  float x = 0, y = 0, size = 0;  // square box: top-left corner and side, source pixels
  float score = 0;               // detector confidence
};

struct FaceResult {
  FaceBox box;
  PointF landmarks[68];
  PointF points5[5];  // left eye, right eye, nose tip, left and right mouth corner (as seen in the image)
  bool analyzed = false;  // false: a face beyond maxFaces, with box and landmarks only
  float yaw = 0, pitch = 0, roll = 0;  // degrees
  float eyeLeft = 0, eyeRight = 0;     // openness 0..1
  float mouthOpenness = 0;
  float sunglasses = 0;
  float brightness = 0;
  float sharpness = 0;
  float eyeDistance = 0;
  float liveness = 0;
  std::vector<float> embedding;  // kTemplateSize (704), unit length; empty when not asked for
  std::vector<uint8_t> alignedCrop;  // 112x112x3 when asked for
};

// Wall time of each stage of one analyze call, milliseconds, summed over faces. With two threads some
// stages overlap, so the stages may add up to more than the total.
struct StageTimings {
  double detect = 0, landmarks = 0, eyes = 0, liveness = 0, quality = 0, embed = 0, total = 0;
  void add(const StageTimings& o) {
    detect += o.detect; landmarks += o.landmarks; eyes += o.eyes;
    liveness += o.liveness; quality += o.quality; embed += o.embed;
  }
};

struct AnalyzeOptions {
  bool embed = true;
  bool eyes = true;      // the eye-state model (enrolment needs it; matching does not)
  bool liveness = true;  // the passive colour liveness model
  bool crop = false;
  int maxFaces = 64;
};

}  // namespace facecheck
