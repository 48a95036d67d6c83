// Face liveness from a depth camera: per-frame depth evidence on the face region (coverage, metric size,
// fit of a plane and of a curved surface, nose relief, eye recess, depth steps, where the closest point
// lies) checked against the colour face's landmarks, fused over a short window of frames of the same
// face with the colour model (fr_liveness) and, optionally, blinks. Every threshold is a LivenessConfig
// field; docs/device.md documents each with its ini key ([liveness] section) and how it was chosen.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "core/camera/camera.h"
#include "core/face/face_types.h"

namespace facecheck {

struct LivenessConfig {
  // ---- depth, per frame
  float minFacePx = 60;             // face box side below which depth is not judged (too few samples)
  float maxDistanceMm = 1200;       // face depth beyond which depth relief is not resolved well enough
  float minDepthCoverage = 0.6f;    // share of the face region with a depth measurement on the face
  float minFaceWidthMm = 95;       // metric width of the face (landmarks 0-16) from depth + intrinsics
  float maxFaceWidthMm = 185;
  float minPlaneRmsMm = 5.0f;       // RMS distance of the face from its best-fitting plane
  float minNoseReliefMm = 6;        // nose tip in front of the curved surface fitted to the rest of the face
  float maxNoseReliefMm = 45;
  float maxEyeRecessMm = 18;        // eyes behind that surface: deeper means holes (cut-out photo)
  float maxDepthStepShare = 0.01f;  // share of neighbouring face samples with a depth step > 25 mm
  float maxNoseOffset = 0.8f;       // closest part of the face: distance from the nose tip / eye distance
  float maxYawDeg = 35;             // face surface orientation from depth; beyond it no decision
  float maxPitchDeg = 30;
  // With an active-infrared image (a stereo camera's projector-lit view): how strongly the projector's dot
  // pattern shows on the face (mean local contrast, relative to the local level, so the imager's exposure
  // does not matter). Skin scatters the dots back to the imager; a screen's glass reflects them away like
  // a mirror and its display emits no infrared, so a phone or tablet shows no pattern whatever it
  // displays. 0 = off.
  float minInfraredPattern = 0.04f;
  // ---- over time (one face track)
  int windowFrames = 5;             // frames of the track considered
  int minPassFrames = 4;            // of which at least this many must pass every depth check
  int maxGapMs = 250;               // a longer gap (or a jump of the face box) starts a new track
  float minMicroMotionMm = 0;       // std of the face depth over the window; 0 = not required
  bool requireBlink = false;        // a blink (eye model) within blinkWindowMs is required
  float blinkClosed = 0.3f, blinkOpen = 0.6f;
  int blinkWindowMs = 5000;
  // ---- colour model
  float colourMin = 0;              // with depth: window median of fr_liveness must reach this (0 = off)
  bool allowColourOnly = false;     // without depth (colour-only replay): may colour alone pass?
  float colourOnlyThreshold = 0.5f; // colour-only: window median of fr_liveness needed
  int colourEvery = 1;              // run fr_liveness on every Nth frame of a track
};

// Bits of DepthFeatures::failed (and FrameDecision::failed).
enum DepthCheck : uint32_t {
  kNoDepth = 1u << 0,
  kTooSmall = 1u << 1,
  kCoverage = 1u << 2,
  kPose = 1u << 3,
  kFaceWidth = 1u << 4,
  kFlat = 1u << 5,
  kNoseRelief = 1u << 6,
  kEyeRecess = 1u << 7,
  kDepthStep = 1u << 8,
  kNoseOffset = 1u << 9,
  kDistance = 1u << 10,
  kInfrared = 1u << 11,
  // temporal / colour (FrameDecision only)
  kWindow = 1u << 16,
  kColour = 1u << 17,
  kBlink = 1u << 18,
  kMotion = 1u << 19,
  kColourOnly = 1u << 20,
};
// Names of the set bits, comma separated ("coverage,nose-relief").
std::string checkNames(uint32_t bits);

struct DepthFeatures {
  bool measured = false;
  float coverage = 0, depthMm = 0, faceWidthMm = 0, eyeDistanceMm = 0;
  float planeRmsMm = 0, curvedRmsMm = 0, noseReliefMm = 0, eyeRecessMm = 0, depthStepShare = 0;
  float noseOffset = 0, yawDeg = 0, pitchDeg = 0;
  float infraredPattern = -1;  // the projector's pattern on the face (-1: the frame has no infrared)
  int samples = 0;
  uint32_t failed = 0;
};

// Depth evidence for one face of one frame (depth registered to the colour image the landmarks come from).
DepthFeatures measureDepth(const CameraFrame& frame, const FaceResult& face, const LivenessConfig& config);

struct FrameDecision {
  bool live = false;
  uint32_t failed = 0;          // why not (DepthCheck bits); 0 when live
  int windowSize = 0, windowPass = 0;
  float colour = -1;            // window median of fr_liveness (-1: none yet)
  float microMotionMm = 0;
  bool blinkSeen = false;
  bool newTrack = false;
};

// The temporal part: one track (the largest face), reset when the face jumps or disappears.
class LivenessTracker {
 public:
  explicit LivenessTracker(const LivenessConfig& config) : config_(config) {}
  // `colour` < 0 when the colour model did not run on this frame.
  FrameDecision update(int64_t timestampUs, const FaceResult& face, const DepthFeatures& depth, bool hasDepth,
                       float colour);
  void noFace(int64_t timestampUs);
  // Whether the colour model should run on the next frame of the current track.
  bool colourDue() const { return framesInTrack_ % std::max(1, config_.colourEvery) == 0; }

 private:
  struct Entry {
    int64_t t;
    bool depthPass;
    float colour;
    float depthMm;
  };
  LivenessConfig config_;
  std::deque<Entry> window_;
  std::deque<std::pair<int64_t, float>> eyes_;  // (time, mean openness) over blinkWindowMs
  FaceBox lastBox_;
  int64_t lastUs_ = -1;
  int64_t framesInTrack_ = 0;
};

}  // namespace facecheck
