// The synthetic depth camera: renders colour + registered depth scenes of live faces (a 3-D head shape
// carrying the texture of a real face photo, varied in size, distance, pose, motion and blinks) and of
// presentation attacks (flat, tilted and bent prints, phone and tablet replays, a cut-out photo with eye
// holes held over a real face, photos too small or too large for their distance), through a sensor model
// (depth noise growing with distance, holes, disparity quantisation). A scenario list makes what it shows
// deterministic: each segment is one presentation with its own seed.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/camera/camera.h"
#include "core/camera/sources/synthetic/synthetic_render.h"
#include "core/face/similarity_transform.h"

namespace facecheck {

// A photo of one face with its 68 landmarks (iBUG order, photo pixels): the texture of synthetic faces.
struct FaceTexture {
  std::vector<uint8_t> rgb;
  int width = 0, height = 0;
  PointF landmarks[68];
};

enum class SceneKind {
  None,          // empty scene: background only
  Live,          // a live person
  Print,         // flat printed photo held roughly straight, life size
  PrintTilted,   // flat print turned 15-40 degrees
  PrintBent,     // print bent around a vertical or horizontal axis
  ScreenPhone,   // phone screen replay
  ScreenTablet,  // tablet screen replay, face near life size
  CutoutEyes,    // printed face with eye holes held over a real face (real eyes blink through)
  PhotoSmall,    // print with a face 0.3-0.65x life size
  PhotoLarge,    // print with a face 1.5-2.6x life size
  Unplug,        // the camera disconnects for the segment
};
constexpr int kSceneKinds = 11;
const char* sceneKindName(SceneKind kind);
bool parseSceneKind(const std::string& name, SceneKind* kind);
bool isAttack(SceneKind kind);

struct ScenarioItem {
  SceneKind kind = SceneKind::Live;
  double seconds = 3;
};

// "live:5, print:2, none:1" - kind[:seconds][xN], separated by commas, semicolons or newlines.
// Seconds default to 3; xN repeats the item N times (each repetition is a new presentation).
Result parseScenario(const std::string& text, std::vector<ScenarioItem>* items);

struct SyntheticOptions {
  std::vector<ScenarioItem> scenario;  // empty: live, forever
  bool loop = true;
  uint64_t seed = 1;
  double fps = 30;
  bool realtime = true;
  bool infrared = false;  // also render the active-infrared image a stereo camera gives
  int width = 640, height = 480;
  CameraIntrinsics intrinsics;
  std::vector<std::shared_ptr<const FaceTexture>> faces;  // at least one; the camera lets go of them once prepared
};

namespace synth {
struct PreparedFace;
struct Presentation;
}  // namespace synth

// Renders presentations frame by frame; usable without a camera (tests, benchmarks).
class SceneRenderer {
 public:
  // Prepares a head of each face and lets go of the textures (pass the last references to free them).
  SceneRenderer(std::vector<std::shared_ptr<const FaceTexture>> faces, int width, int height,
                CameraIntrinsics intrinsics);
  ~SceneRenderer();
  // Draws the presentation's parameters from its seed.
  void begin(SceneKind kind, uint64_t seed);
  // Renders the current presentation at t seconds after its start.
  void render(double t, uint64_t frameSeed, CameraFrame* frame);
  size_t faceCount() const { return faces_.size(); }
  // Also render the active-infrared image (CameraFrame::ir).
  void setInfrared(bool on) { infrared_ = on; }

 private:
  std::vector<std::unique_ptr<synth::PreparedFace>> faces_;
  std::vector<synth::Texture> walls_;
  std::unique_ptr<synth::Presentation> current_;
  int width_, height_;
  CameraIntrinsics intrinsics_;
  synth::RenderBuffers buffers_;
  synth::RenderBuffers wallCache_;  // the background of the current presentation (it never moves)
  uint64_t wallSeed_ = 0;
  bool infrared_ = false;
};

class SyntheticCamera : public CameraSource {
 public:
  explicit SyntheticCamera(SyntheticOptions options);
  ~SyntheticCamera() override;
  const char* name() const override { return "synthetic"; }
  Result open() override;
  Result read(CameraFrame* frame) override;
  void interrupt() override { closed_ = true; }
  bool lossless() const override { return !options_.realtime; }
  bool ended() const override { return ended_; }

 private:
  // The segment shown at frame index `frame` (counting over loops); false past the end.
  bool segmentAt(uint64_t frame, size_t* item, int64_t* presentation, uint64_t* startFrame) const;

  SyntheticOptions options_;
  std::unique_ptr<SceneRenderer> renderer_;
  std::vector<uint64_t> segmentStart_;  // first frame of each scenario item
  uint64_t cycleFrames_ = 0;
  uint64_t frameIndex_ = 0;
  uint64_t sequence_ = 0;
  int64_t shownPresentation_ = -1;
  int64_t startUs_ = 0;
  std::atomic<bool> closed_{false};
  std::atomic<bool> ended_{false};
};

}  // namespace facecheck
