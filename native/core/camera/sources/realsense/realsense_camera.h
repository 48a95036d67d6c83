// The realsense source: Intel RealSense depth cameras (D415, D435, D435i, D455, D405, ...) through
// librealsense2, loaded at run time (realsense_api.h), or a RealSense recording (.bag).
//
// It opens the camera with the serial asked for (or the first one), starts its Z16 depth stream, its RGB8
// colour stream and, when asked, its left infrared stream (Y8, the imager depth is computed from) at the
// nearest mode the camera offers; groups the streams' frames by timestamp into sets (one frame of each
// stream, within half a frame period), bundles each set into a composite frame through a processing block
// of its own and aligns depth to colour with the SDK's align block, using the camera's own calibration (colour intrinsics, depth to colour
// extrinsics) and depth scale (RS2_OPTION_DEPTH_UNITS), never assumed ones. The infrared image is mapped
// onto the colour grid through the same calibration. Frames carry the camera's own timestamps.
//
// Threads: the SDK calls onSensorFrame on its own threads; open/read/close (and onCompose) run on the
// capture thread. A live camera drops the oldest frame set when the analysis falls behind; a recording
// played with realtime = false loses none: the SDK's reader, in its real-time mode, waits for each frame
// callback, and the callback waits while frame sets wait for read() (so it plays every frame, at most at
// its recorded pace). A recording starts paused until every sensor runs and is then played from its start,
// so no stream misses its first frames. An unplugged camera (the SDK's devices changed callback) or one
// that stops sending for stallMs answers CameraNotConnected; the pipeline then reopens it.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/camera/camera.h"
#include "core/camera/sources/realsense/realsense_api.h"

namespace facecheck {

struct RealSenseOptions {
  std::string library = "auto";
  std::string serial;                       // empty: the first camera
  std::string bag;                          // a .bag recording to play instead of a camera
  bool loop = false;                        // .bag: repeat it at its end
  bool realtime = true;                     // .bag: at its recorded pace (false: every frame, as fast as analysed)
  int width = 640, height = 480, fps = 30;  // wanted mode (the nearest offered is taken)
  bool infrared = true;                     // read the left infrared stream too
  std::string emitter = "on";               // on | off | device (leave as the camera has it)
  int stallMs = 2000;
  std::string recordPath;                   // record the session to this .bag (the SDK's recorder)
};

template <typename T>
using RealSenseHandle = std::unique_ptr<T, std::function<void(T*)>>;

class RealSenseCamera : public CameraSource {
 public:
  explicit RealSenseCamera(RealSenseOptions options);
  ~RealSenseCamera() override;
  const char* name() const override { return "realsense"; }
  Result open() override;
  Result read(CameraFrame* frame) override;
  void close() override;
  void interrupt() override;
  bool lossless() const override { return !options_.bag.empty() && !options_.realtime; }
  bool ended() const override { return ended_; }

 private:
  static void onSensorFrame(rs2_frame* frame, void* self);
  static void onCompose(rs2_frame* trigger, rs2_source* source, void* self);
  static void onDevicesChanged(rs2_device_list* removed, rs2_device_list* added, void* self);

  Result openDevice();
  Result chooseStreams();
  Result startStreams();
  // *skipped: the set repeats one already given (the playback restarted from its start once every sensor ran).
  Result takeFrameset(rs2_frame* frameset, CameraFrame* frame, bool* skipped);
  void setPaused(bool paused);
  void mapInfrared(rs2_frame* depth, rs2_frame* infrared, CameraFrame* frame);
  bool playbackStopped() const;
  void releaseQueued();
  RealSenseHandle<rs2_frame> hold(rs2_frame* f) const;

  RealSenseOptions options_;
  std::shared_ptr<RealSenseApi> api_;
  // Released in reverse order of declaration: blocks and queues, sensors, profiles, devices, context.
  RealSenseHandle<rs2_context> context_;
  RealSenseHandle<rs2_device> device_;          // the camera or the playback device
  RealSenseHandle<rs2_device> recorder_;        // wraps device_ when recording
  RealSenseHandle<rs2_sensor_list> sensorList_;
  std::vector<RealSenseHandle<rs2_sensor>> sensors_;
  std::vector<RealSenseHandle<rs2_stream_profile_list>> profileLists_;
  RealSenseHandle<rs2_processing_block> composer_;
  RealSenseHandle<rs2_frame_queue> composed_;
  RealSenseHandle<rs2_processing_block> align_;
  RealSenseHandle<rs2_frame_queue> aligned_;

  // Chosen streams: each profile belongs to profileLists_; sensor index into sensors_.
  const rs2_stream_profile* depthProfile_ = nullptr;
  const rs2_stream_profile* colourProfile_ = nullptr;
  const rs2_stream_profile* infraredProfile_ = nullptr;
  int depthSensor_ = -1, colourSensor_ = -1;
  std::vector<int> started_;  // sensors started, in start order
  float depthUnits_ = 0.001f;  // metres per depth unit
  rs2_intrinsics depthIntrinsics_{}, colourIntrinsics_{};
  rs2_extrinsics depthToColour_{};
  std::string label_;  // "Intel RealSense D435 (serial 123)" or the recording's path

  std::mutex mutex_;
  std::condition_variable changed_;
  enum Slot { kDepth = 0, kColour = 1, kInfrared = 2 };
  using FrameSet = std::array<rs2_frame*, 3>;  // by Slot; infrared null when not read
  struct Pending {
    rs2_frame* frame;
    double ts;  // ms, the frame's own timestamp
  };
  int streamSlot(rs2_frame* frame) const;
  void matchPending();  // under mutex_
  void releaseSet(const FrameSet& set) const;

  std::deque<Pending> pending_[3];   // per stream, waiting for their partners
  std::deque<FrameSet> framesets_;   // matched sets waiting for read()
  FrameSet composing_{};             // the set read() is bundling (onCompose runs in read())
  double halfPeriodMs_ = 16.7;
  bool stopping_ = false;
  std::atomic<bool> disconnected_{false};
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> ended_{false};
  bool sawFrame_ = false;
  bool paused_ = false;       // the playback, paused while its sensors start and at close
  int64_t lastRawTs_ = -1;    // the recording's own timestamp of the last frame given, this pass
  int64_t lastTs_ = -1, tsOffset_ = 0;
  uint64_t sequence_ = 0;
};

}  // namespace facecheck
