// The device's capture pipeline: a capture thread per camera reads frames, optionally records them, and
// hands them to worker threads that run detection + landmarks (+ eye state, colour liveness) and the
// depth liveness, then fuse the evidence over time in frame order. Frames never leave C++: the last face
// that passed liveness (crop, landmarks and the full frame) is kept here, and only small per-frame
// reports and status changes go out through the event sink (the addon forwards them to JavaScript
// through a bounded thread-safe queue; a refused report is counted, never waited for).
//
// Realtime sources: a frame that arrives while every worker is busy replaces the oldest waiting frame
// (counted as dropped), so the newest frame is always the next one analysed. Lossless sources (virtual
// time): the capture thread waits for a free worker instead, so every frame is analysed.
//
// Idle detection (realtime sources): once no face has been found for idleAfterMs, only idleDetectFps
// frames a second go to analysis, so an empty scene costs a fraction of the detector's CPU; the first
// frame in which a face is found switches back to every frame at once, because the liveness window
// needs consecutive frames. Lossless sources analyse every frame (they exist to test and measure that).
// While idle, the capture thread also gives the process's free heap memory back to the kernel, on
// entering idle and every idleTrimMs after (core/camera/heap_trim.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/camera/camera.h"
#include "core/liveness/liveness.h"
#include "core/camera/recording.h"
#include "core/face/face_engine.h"

namespace facecheck {

struct PipelineConfig {
  LivenessConfig liveness;
  int workers = 1;
  bool process = true;          // false: capture (and record) only
  int reconnectMs = 1000;       // pause between attempts to (re)open the camera
  int cropSize = 120;           // live face image side (spec 8: 120x120)
  float cropGrow = 1.3f;        // the crop covers the face box grown by this factor
  std::string recordDir;        // non-empty: write frames there
  RecordingFormat recordFormat = RecordingFormat::FaceCheck;
  uint64_t recordFrames = 0;    // stop recording after this many frames (0: until stopped)
  bool stopAfterRecording = false;
  uint64_t maxFrames = 0;       // stop capturing after this many frames (0: never)
  double idleDetectFps = 0;     // analysed frames a second while idle (0: every frame, never idle)
  int idleAfterMs = 1000;       // no face found for this long: idle
  int idleTrimMs = 10000;       // while idle: free heap memory back to the kernel on entering, then this often (0: never)
};

struct FrameReport {
  uint64_t sequence = 0;
  int64_t timestampUs = 0;
  FrameTruth truth;
  bool face = false;
  int faces = 0;
  FaceBox box;
  float eyeLeft = -1, eyeRight = -1;
  float colourFrame = -1;       // fr_liveness on this frame (-1: not run)
  DepthFeatures depth;
  FrameDecision decision;
  double analyseMs = 0;         // worker time for this frame
  double latencyMs = 0;         // capture -> decision (queue wait included)
  uint64_t liveId = 0;          // the live capture stored from this frame (0: none)
};

struct PipelineStatus {
  bool connected = false;
  bool ended = false;           // the source will not deliver any more (recording/scenario end)
  std::string source;
  std::string lastError;
  uint64_t framesCaptured = 0, framesAnalysed = 0, framesDropped = 0, reportsDropped = 0;
  uint64_t reconnects = 0, liveCaptures = 0, framesRecorded = 0;
  uint64_t framesIdleSkipped = 0;  // captured while idle and not analysed (not counted as dropped)
  bool idle = false;               // analysing at idleDetectFps because no face was found lately
  uint64_t heapTrims = 0;          // times free heap memory went back to the kernel while idle (heap_trim.h)
  double captureFps = 0, analyseFps = 0;
  double workerCpuMs = 0, captureCpuMs = 0;
  int64_t lastFrameUs = 0;
};

struct LiveCapture {
  uint64_t id = 0;
  int64_t timestampUs = 0;      // frame time (source clock)
  int64_t storedUs = 0;         // steady clock when stored
  std::vector<uint8_t> crop;    // cropSize x cropSize RGB
  int cropSize = 0;
  FaceBox box;
  PointF landmarks[68];
  float colour = -1;
  DepthFeatures depth;
  std::shared_ptr<const CameraFrame> frame;  // the full frame, for faceKey operations
};

struct PipelineEvent {
  enum class Type { Frame, Status } type = Type::Frame;
  FrameReport frame;
  PipelineStatus status;
};

class CapturePipeline {
 public:
  // Returns false when the event could not be queued (then counted as a dropped report).
  using EventSink = std::function<bool(PipelineEvent&&)>;

  CapturePipeline(std::unique_ptr<CameraSource> source, std::shared_ptr<FaceEngine> engine, PipelineConfig config,
                  EventSink sink);
  ~CapturePipeline();
  CapturePipeline(const CapturePipeline&) = delete;
  CapturePipeline& operator=(const CapturePipeline&) = delete;

  void start();
  void stop();  // joins every thread; idempotent
  PipelineStatus status() const;
  // The newest live capture if stored less than maxAgeMs ago (steady clock), else null.
  std::shared_ptr<const LiveCapture> liveFace(int64_t maxAgeMs) const;

 private:
  struct Item {
    std::shared_ptr<CameraFrame> frame;
    int64_t capturedUs = 0;
    uint64_t order = 0;  // assigned at dequeue: fusion runs in this order
  };
  void captureLoop();
  void workerLoop();
  void emitStatus();
  bool interruptibleSleep(int ms);
  // Idle detection: whether the capture thread hands the frame captured at `now` to analysis.
  bool dueForAnalysis(int64_t now);

  std::unique_ptr<CameraSource> source_;
  std::shared_ptr<FaceEngine> engine_;
  PipelineConfig config_;
  EventSink sink_;

  std::atomic<bool> stopping_{false};
  std::thread capture_;
  std::vector<std::thread> workers_;

  // Frame queue.
  std::mutex queueMutex_;
  std::condition_variable queueCv_;   // frames available / space available
  std::deque<Item> queue_;
  uint64_t nextOrder_ = 0;
  bool captureDone_ = false;

  // Ordered fusion.
  std::mutex fusionMutex_;
  std::condition_variable fusionCv_;
  uint64_t fusionNext_ = 0;
  LivenessTracker tracker_;

  // Live store and status.
  mutable std::mutex stateMutex_;
  std::shared_ptr<const LiveCapture> live_;
  uint64_t liveCounter_ = 0;
  PipelineStatus status_;
  std::deque<int64_t> captureTimes_, analyseTimes_;
  std::atomic<int> workersRunning_{0};
  double workerCpuMs_ = 0;

  // Idle detection: when a worker last found a face (steady clock), and when the capture thread next
  // hands a frame to analysis while idle.
  std::atomic<int64_t> lastFaceUs_{0};
  int64_t nextIdleAnalysisUs_ = 0;
  // Capture thread only: when free heap memory next goes back to the kernel while idle (0: on entering).
  int64_t nextHeapTrimUs_ = 0;
  void trimHeapWhileIdle(int64_t now, bool idle);
};

}  // namespace facecheck
