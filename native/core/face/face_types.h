// What the engine computes for one face.
#pragma once

#include <cstdint>
#include <vector>

#include "core/face/similarity_transform.h"

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
  std::vector<float> embedding;  // the template (704 values with the manifest's networks), unit length; empty when not asked for
  std::vector<uint8_t> alignedCrop;  // 112x112x3 when asked for
};

// How many times each stage ran in one analyze call (detect: once per image; the others once per face they
// ran for), so a caller can see what an analysis really did, not only what it asked for.
struct StageRuns {
  int detect = 0, landmarks = 0, eyes = 0, liveness = 0, quality = 0, embed = 0;
  void add(const StageRuns& o) {
    detect += o.detect; landmarks += o.landmarks; eyes += o.eyes;
    liveness += o.liveness; quality += o.quality; embed += o.embed;
  }
};

// Wall time of each stage of one analyze call, milliseconds, summed over faces; a stage that did not run
// reads exactly 0. With two threads some stages overlap, so the stages may add up to more than the total.
struct StageTimings {
  double detect = 0, landmarks = 0, eyes = 0, liveness = 0, quality = 0, embed = 0, total = 0;
  StageRuns runs;
  void add(const StageTimings& o) {
    detect += o.detect; landmarks += o.landmarks; eyes += o.eyes;
    liveness += o.liveness; quality += o.quality; embed += o.embed;
    runs.add(o.runs);
  }
};

// The stages an analysis runs beyond detection and the analysed faces' landmarks (which every caller
// needs). The defaults run everything; each service operation asks only for what its answer depends on.
struct AnalyzeOptions {
  bool embed = true;
  bool eyes = true;      // the eye-state model (enrolment needs it; matching does not)
  bool liveness = true;  // the passive colour liveness model
  bool quality = true;   // brightness, sharpness, mouth openness, sunglasses (the enrolment checks)
  // Landmarks (and pose) of the faces beyond maxFaces too; without them those faces carry their box only.
  bool otherFaceLandmarks = true;
  bool crop = false;
  int maxFaces = 64;
};

}  // namespace facecheck
