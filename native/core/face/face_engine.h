// The face engine: loads every model once and turns an RGB image into faces with landmarks, pose,
// attributes, quality measures, liveness and templates. Thread-safe: analyses run concurrently, each
// on a workspace taken from a pool, so steady-state calls allocate only their results.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/face/face_attributes.h"
#include "core/face/face_detector.h"
#include "core/face/face_embedder.h"
#include "core/face/landmarker.h"

namespace facecheck {

struct EngineConfig {
  std::string modelDir;
  // Threads one analysis may use: 2 runs the second embedding network, the liveness and the eye models
  // beside the first network and the quality measures. Each ONNX session itself runs single-threaded.
  int threads = 1;
  // The template's networks (FaceEmbedder), from models/manifest.json `template`. Empty: no embedding
  // network is loaded and analyses cannot embed (the device camera's own engine).
  std::vector<EmbeddingNetwork> templateNetworks;
  // Detector confidence for a face. 0.85: on the annotated scenes of ../shared/data/quality every real face
  // scores >= 0.94 while the false detections (between two close faces, in foliage) score 0.77-0.80.
  float minDetectionScore = 0.85f;
  // Off: on LFW the flip-averaged fr_feature template was within one pair of the plain one (DevTest 99.1 vs
  // 99.0 %, TAR@FAR1e-3 98.4 vs 98.2 %) for a second pass of every network (bench:lfw, bench:engine).
  bool flipAverage = false;
  // Limits checked before any work: larger images are refused, not resized.
  int maxDimension = 16384;
  long long maxPixels = 100000000;
};

class FaceEngine {
 public:
  static Result load(const EngineConfig& config, std::unique_ptr<FaceEngine>* out);

  // Analyses an interleaved RGB image (width*height*3 bytes). Faces come largest first.
  Result analyze(const uint8_t* rgb, size_t bytes, int width, int height, const AnalyzeOptions& options,
                 std::vector<FaceResult>* faces, StageTimings* timings);

  // Number of analyses running now; close is refused while it is not zero.
  int active() const { return active_.load(); }

  // Frees the idle pooled workspaces: each keeps image buffers sized to the largest image it analysed,
  // which a caller done with large images (the camera, after its photos) need not keep.
  void releaseWorkspaces();

  // Per-stage access for the capture pipeline (core/face/face_engine_stages.h).
  friend class FrameStages;

 private:
  struct Workspace {
    ImagePyramid pyramid;
    FaceDetector::Workspace detector;
    Landmarker::Workspace landmarker;
    FaceAttributes::Workspace attributes;
    std::vector<FaceEmbedder::Workspace> embedder;  // one per network: lanes run networks side by side
    std::vector<std::array<std::vector<float>, 2>> passOutput;  // per network: the crop's and the mirror's embedding
    std::vector<FaceBox> boxes;
    std::vector<uint8_t> aligned;
  };
  std::unique_ptr<Workspace> acquire();
  void release(std::unique_ptr<Workspace> ws);
  Result analyzeFace(Workspace& ws, const AnalyzeOptions& options, FaceResult* face, StageTimings* timings) const;

  EngineConfig config_;
  std::unique_ptr<FaceDetector> detector_;
  std::unique_ptr<Landmarker> landmarker_;
  std::unique_ptr<FaceAttributes> attributes_;
  std::unique_ptr<FaceEmbedder> embedder_;  // null when the config has no template weights
  std::mutex poolMutex_;
  std::vector<std::unique_ptr<Workspace>> pool_;
  std::atomic<int> active_{0};
};

}  // namespace facecheck
