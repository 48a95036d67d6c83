// The openni2 source: any depth camera with an OpenNI2 driver (Orbbec Astra / Astra Pro / Mini / Persee
// through Orbbec's driver, Asus Xtion and PrimeSense Carmine through the PS1080 driver), or an OpenNI2
// recording (.oni, through OpenNI2's file driver). libOpenNI2 is loaded at run time (openni2_api.h).
//
// It opens the device `uri` (or the first one OpenNI2 lists), starts colour (RGB888, or YUV422/YUYV
// converted) and depth (DEPTH_1_MM or DEPTH_100_UM; raw disparity formats are refused), turns mirroring
// off (or un-mirrors in software when the driver will not), registers depth to colour with the device's
// IMAGE_REGISTRATION_DEPTH_TO_COLOR or, when the device lacks it, maps each depth pixel with OpenNI2's
// depth-to-colour converter (registration = auto; see docs/device.md), and takes the colour camera's
// intrinsics from the stream's fields of view. An unplugged device (OpenNI2's disconnected callback) or
// one that stops sending for stallMs answers CameraNotConnected; the pipeline then reopens it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/camera/camera.h"
#include "core/camera/sources/openni2/openni2_api.h"

namespace facecheck {

struct OpenNI2Options {
  std::string library = "libOpenNI2.so.0";  // dlopen name or path; OpenNI2 finds its drivers beside it
  std::string uri;                          // device URI or .oni path; empty: the first device
  int width = 640, height = 480, fps = 30;  // wanted colour/depth mode (the nearest offered is taken)
  std::string registration = "auto";        // auto | device | converter | none
  int stallMs = 2000;                       // no frame pair for this long: disconnected
  bool loop = false;                        // .oni playback: repeat at the end
  std::string recordPath;                   // record the session to this .oni (OpenNI2's recorder)
};

class OpenNI2Camera : public CameraSource {
 public:
  explicit OpenNI2Camera(OpenNI2Options options);
  ~OpenNI2Camera() override;
  const char* name() const override { return "openni2"; }
  // Each runs on OpenNI2's own thread (onOpenNI2Thread).
  Result open() override;
  Result read(CameraFrame* frame) override;
  void close() override;
  void interrupt() override { interrupted_ = true; }
  bool ended() const override { return ended_; }

  // OpenNI2's device callback (any thread): the device `uri` was unplugged.
  void onDisconnected(const char* uri);

 private:
  struct DeviceCloser { OpenNI2Api* api; void operator()(_OniDevice* d) const; };
  struct StreamCloser { OpenNI2Api* api; void operator()(_OniStream* s) const; };
  struct RecorderCloser { OpenNI2Api* api; void operator()(_OniRecorder* r) const; };
  using Device = std::unique_ptr<_OniDevice, DeviceCloser>;
  using Stream = std::unique_ptr<_OniStream, StreamCloser>;
  using Recorder = std::unique_ptr<_OniRecorder, RecorderCloser>;

  Result openOnOpenNI2Thread();
  Result readOnOpenNI2Thread(CameraFrame* frame);
  void closeOnOpenNI2Thread();
  Result initialise();
  Result openStreams();
  Result chooseMode(OniSensorType type, OniVideoMode* mode);
  Result setUpRegistration();
  void readIntrinsics();
  Result startRecorder();
  void takeDepth(const OniFrame& f);
  void takeColour(const OniFrame& f);

  OpenNI2Options options_;
  std::unique_ptr<OpenNI2Api> api_;
  OniCallbackHandleImpl* callbacks_ = nullptr;
  // Close order: recorder, streams, device (reverse of declaration).
  Device device_{nullptr, DeviceCloser{nullptr}};
  Stream depthStream_{nullptr, StreamCloser{nullptr}};
  Stream colourStream_{nullptr, StreamCloser{nullptr}};
  Recorder recorder_{nullptr, RecorderCloser{nullptr}};

  std::mutex uriMutex_;
  std::string uri_;  // of the open device
  std::atomic<bool> disconnected_{false};
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> ended_{false};
  bool isFile_ = false;
  bool mirrorInSoftware_ = false;
  bool mapDepth_ = false;  // registration by OpenNI2's per-pixel depth-to-colour converter
  OniVideoMode colourMode_{}, depthMode_{};
  CameraIntrinsics intrinsics_;
  std::vector<uint8_t> rgb_;
  std::vector<uint16_t> depth_;
  bool haveDepth_ = false, haveColour_ = false;
  int64_t colourTs_ = 0, depthTs_ = 0;  // device timestamps of the frames held
  bool pairsByClock_ = true;              // pair frames by timestamp (false: the streams' clocks differ)
  int unpaired_ = 0;
  int64_t lastTs_ = -1, tsOffset_ = 0;
  uint64_t sequence_ = 0;
};

}  // namespace facecheck
