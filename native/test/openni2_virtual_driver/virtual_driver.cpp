// libFaceCheckVirtual.so: a virtual OpenNI2 device driver, written on OpenNI2's driver API
// (Driver/OniDriverAPI.h), so that the openni2 camera source is tested through the real libOpenNI2 without
// a camera. OpenNI2 loads it like any vendor driver (Orbbec's, PrimeSense's) from its driver folder.
//
// A device plays a face-check recording (recording.h: colour + depth in millimetres registered to colour)
// and reports what a structured-light camera reports: RGB888 colour and DEPTH_1_MM / DEPTH_100_UM depth
// video modes, fields of view from the recording's intrinsics, depth-to-colour registration, mirroring (on
// by default, as PrimeSense devices start). Its URI names the recording and the behaviour under test:
//
//   face-check-virtual:<recording dir>[#key=value,...]
//     fps=N          frames a second sent (default 30; timestamps stay the recorded ones)
//     loop=0|1       play the recording again at its end (default 0: the device then stops sending)
//     unplug=N       the first connection of this URI disconnects after N frames (driver callback)
//     replug_ms=N    ... and the device is back N ms later (default 500)
//     depth=mm|100um|shift|none   the depth formats offered (shift: raw disparity only; none: no depth sensor)
//     registration=0 the device cannot register depth to colour
//     cropping=0     the streams do not report the cropping property (as a minimal driver's)
//
// The environment variable FACE_CHECK_VIRTUAL_URI, when set, names a device present from the start (so a
// source opening "the first device" finds it); any other URI of this scheme is made on demand (tryDevice).
#define XN_NEW(type, arg) new type(arg)
#define XN_DELETE(p) delete (p)
#include <Driver/OniDriverAPI.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/camera/recording.h"

namespace {

using facecheck::CameraFrame;
using facecheck::RecordingIndex;

constexpr char kScheme[] = "face-check-virtual:";
// Without registration the depth image stays in the depth camera's own grid: shifted by the baseline.
constexpr int kUnregisteredShiftPx = 24;

struct VirtualSpec {
  std::string uri, dir;
  int fps = 30;
  bool loop = false;
  int unplugAfter = 0;
  int replugMs = 500;
  std::string depth = "mm";
  bool registration = true;
  bool cropping = true;
};

bool parseSpec(const char* uri, VirtualSpec* spec) {
  if (!uri || std::strncmp(uri, kScheme, sizeof kScheme - 1) != 0) return false;
  spec->uri = uri;
  std::string rest = uri + sizeof kScheme - 1;
  size_t hash = rest.find('#');
  spec->dir = rest.substr(0, hash);
  std::string opts = hash == std::string::npos ? "" : rest.substr(hash + 1);
  size_t pos = 0;
  while (pos < opts.size()) {
    size_t end = opts.find(',', pos);
    if (end == std::string::npos) end = opts.size();
    std::string item = opts.substr(pos, end - pos);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "fps") spec->fps = std::max(1, std::atoi(value.c_str()));
    else if (key == "loop") spec->loop = value == "1";
    else if (key == "unplug") spec->unplugAfter = std::atoi(value.c_str());
    else if (key == "replug_ms") spec->replugMs = std::atoi(value.c_str());
    else if (key == "depth") spec->depth = value;
    else if (key == "registration") spec->registration = value != "0";
    else if (key == "cropping") spec->cropping = value != "0";
    pos = end + 1;
  }
  return !spec->dir.empty();
}

OniDeviceInfo deviceInfo(const std::string& uri) {
  OniDeviceInfo info{};
  std::snprintf(info.uri, sizeof info.uri, "%s", uri.c_str());
  std::snprintf(info.vendor, sizeof info.vendor, "face-check");
  std::snprintf(info.name, sizeof info.name, "Virtual depth camera");
  info.usbVendorId = 0;
  info.usbProductId = 0;
  return info;
}

template <typename T>
OniStatus putValue(const T& value, void* data, int* size) {
  if (*size < static_cast<int>(sizeof(T))) return ONI_STATUS_BAD_PARAMETER;
  std::memcpy(data, &value, sizeof(T));
  *size = sizeof(T);
  return ONI_STATUS_OK;
}

class VirtualDevice;

class VirtualStream : public oni::driver::StreamBase {
 public:
  VirtualStream(VirtualDevice* device, OniSensorType type, std::vector<OniVideoMode> modes, bool cropping)
      : device_(device), type_(type), modes_(std::move(modes)), mode_(modes_.front()), cropping_(cropping) {}

  OniStatus start() override;
  void stop() override;
  OniStatus setProperty(int id, const void* data, int size) override {
    if (id == ONI_STREAM_PROPERTY_VIDEO_MODE && size == sizeof(OniVideoMode)) {
      OniVideoMode want;
      std::memcpy(&want, data, sizeof want);
      for (const OniVideoMode& m : modes_)
        if (std::memcmp(&m, &want, sizeof m) == 0) {
          std::lock_guard<std::mutex> lock(mutex_);
          mode_ = m;
          return ONI_STATUS_OK;
        }
      return ONI_STATUS_NOT_SUPPORTED;
    }
    if (id == ONI_STREAM_PROPERTY_CROPPING && cropping_ && size == sizeof(OniCropping)) {
      OniCropping c;
      std::memcpy(&c, data, sizeof c);
      return c.enabled ? ONI_STATUS_NOT_SUPPORTED : ONI_STATUS_OK;  // full frames only
    }
    if (id == ONI_STREAM_PROPERTY_MIRRORING && size == sizeof(OniBool)) {
      std::memcpy(&mirror_, data, sizeof(OniBool));
      return ONI_STATUS_OK;
    }
    return ONI_STATUS_NOT_SUPPORTED;
  }
  OniStatus getProperty(int id, void* data, int* size) override;
  OniBool isPropertySupported(int id) override {
    return id == ONI_STREAM_PROPERTY_VIDEO_MODE || id == ONI_STREAM_PROPERTY_MIRRORING || (id == ONI_STREAM_PROPERTY_CROPPING && cropping_) ||
           id == ONI_STREAM_PROPERTY_HORIZONTAL_FOV || id == ONI_STREAM_PROPERTY_VERTICAL_FOV ||
           (type_ == ONI_SENSOR_DEPTH && (id == ONI_STREAM_PROPERTY_MAX_VALUE || id == ONI_STREAM_PROPERTY_MIN_VALUE));
  }

  OniSensorType type() const { return type_; }
  bool started() const { return started_; }
  // Sends one frame made from the recording's frame (on the device's thread).
  void send(const CameraFrame& frame, uint64_t timestampUs, int frameIndex, bool registered);

 private:
  VirtualDevice* device_;
  OniSensorType type_;
  std::vector<OniVideoMode> modes_;
  std::mutex mutex_;
  OniVideoMode mode_;
  OniBool mirror_ = TRUE;
  bool cropping_;
  std::atomic<bool> started_{false};
};

class VirtualDriver;

class VirtualDevice : public oni::driver::DeviceBase {
 public:
  VirtualDevice(VirtualDriver* driver, VirtualSpec spec, bool unplugThisTime)
      : driver_(driver), spec_(std::move(spec)), unplug_(unplugThisTime) {
    facecheck::readRecordingIndex(spec_.dir, &index_);
    const int w = index_.width, h = index_.height;
    colourModes_ = {OniVideoMode{ONI_PIXEL_FORMAT_RGB888, w, h, spec_.fps}};
    if (spec_.depth == "mm") depthModes_ = {OniVideoMode{ONI_PIXEL_FORMAT_DEPTH_1_MM, w, h, spec_.fps},
                                            OniVideoMode{ONI_PIXEL_FORMAT_DEPTH_100_UM, w, h, spec_.fps}};
    else if (spec_.depth == "100um") depthModes_ = {OniVideoMode{ONI_PIXEL_FORMAT_DEPTH_100_UM, w, h, spec_.fps}};
    else if (spec_.depth == "shift") depthModes_ = {OniVideoMode{ONI_PIXEL_FORMAT_SHIFT_9_2, w, h, spec_.fps}};
    sensors_.push_back(OniSensorInfo{ONI_SENSOR_COLOR, static_cast<int>(colourModes_.size()), colourModes_.data()});
    if (!depthModes_.empty())
      sensors_.push_back(OniSensorInfo{ONI_SENSOR_DEPTH, static_cast<int>(depthModes_.size()), depthModes_.data()});
  }
  ~VirtualDevice() override { stopThread(); }

  bool valid() const { return !index_.frames.empty(); }
  const RecordingIndex& index() const { return index_; }

  OniStatus getSensorInfoList(OniSensorInfo** infos, int* count) override {
    *infos = sensors_.data();
    *count = static_cast<int>(sensors_.size());
    return ONI_STATUS_OK;
  }
  oni::driver::StreamBase* createStream(OniSensorType type) override {
    if (type == ONI_SENSOR_COLOR) return add(new VirtualStream(this, type, colourModes_, spec_.cropping));
    if (type == ONI_SENSOR_DEPTH && !depthModes_.empty()) return add(new VirtualStream(this, type, depthModes_, spec_.cropping));
    return nullptr;
  }
  void destroyStream(oni::driver::StreamBase* stream) override {
    {
      std::lock_guard<std::mutex> lock(streamsMutex_);
      streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
    }
    delete stream;
  }
  OniBool isImageRegistrationModeSupported(OniImageRegistrationMode mode) override {
    return mode == ONI_IMAGE_REGISTRATION_OFF || (spec_.registration && mode == ONI_IMAGE_REGISTRATION_DEPTH_TO_COLOR);
  }
  OniBool isPropertySupported(int id) override { return id == ONI_DEVICE_PROPERTY_IMAGE_REGISTRATION; }
  OniStatus setProperty(int id, const void* data, int size) override {
    if (id != ONI_DEVICE_PROPERTY_IMAGE_REGISTRATION || size != sizeof(OniImageRegistrationMode)) return ONI_STATUS_NOT_SUPPORTED;
    OniImageRegistrationMode mode;
    std::memcpy(&mode, data, sizeof mode);
    if (!isImageRegistrationModeSupported(mode)) return ONI_STATUS_NOT_SUPPORTED;
    registered_ = mode == ONI_IMAGE_REGISTRATION_DEPTH_TO_COLOR;
    return ONI_STATUS_OK;
  }
  OniStatus getProperty(int id, void* data, int* size) override {
    if (id != ONI_DEVICE_PROPERTY_IMAGE_REGISTRATION) return ONI_STATUS_NOT_SUPPORTED;
    return putValue<OniImageRegistrationMode>(registered_ ? ONI_IMAGE_REGISTRATION_DEPTH_TO_COLOR : ONI_IMAGE_REGISTRATION_OFF, data, size);
  }

  // Returns once no frame is being sent (frames are sent with streamsMutex_ held).
  void waitForSend() { std::lock_guard<std::mutex> lock(streamsMutex_); }

  void streamStarted() {
    std::lock_guard<std::mutex> lock(threadMutex_);
    if (!thread_.joinable()) {
      running_ = true;
      thread_ = std::thread([this] { run(); });
    }
  }
  void stopThread() {
    running_ = false;
    std::lock_guard<std::mutex> lock(threadMutex_);
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  VirtualStream* add(VirtualStream* s) {
    std::lock_guard<std::mutex> lock(streamsMutex_);
    streams_.push_back(s);
    return s;
  }
  void run();

  VirtualDriver* driver_;
  VirtualSpec spec_;
  bool unplug_;
  RecordingIndex index_;
  std::vector<OniVideoMode> colourModes_, depthModes_;
  std::vector<OniSensorInfo> sensors_;
  std::mutex streamsMutex_;
  std::vector<oni::driver::StreamBase*> streams_;
  std::atomic<bool> registered_{false};
  std::mutex threadMutex_;
  std::thread thread_;
  std::atomic<bool> running_{false};
};

class VirtualDriver : public oni::driver::DriverBase {
 public:
  explicit VirtualDriver(OniDriverServices* services) : DriverBase(services) {}

  OniStatus initialize(oni::driver::DeviceConnectedCallback connected, oni::driver::DeviceDisconnectedCallback disconnected,
                       oni::driver::DeviceStateChangedCallback stateChanged, void* cookie) override {
    DriverBase::initialize(connected, disconnected, stateChanged, cookie);
    hotplug_ = std::thread([this] { hotplugLoop(); });
    const char* uri = std::getenv("FACE_CHECK_VIRTUAL_URI");
    if (uri && *uri) tryDevice(uri);
    return ONI_STATUS_OK;
  }

  OniStatus tryDevice(const char* uri) override {
    VirtualSpec spec;
    if (!parseSpec(uri, &spec)) return ONI_STATUS_ERROR;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = unpluggedUntil_.find(spec.uri);
    if (it != unpluggedUntil_.end()) return ONI_STATUS_ERROR;  // unplugged: back after replug_ms
    if (present_.count(spec.uri)) return ONI_STATUS_OK;
    present_[spec.uri] = true;
    OniDeviceInfo info = deviceInfo(spec.uri);
    deviceConnected(&info);
    return ONI_STATUS_OK;
  }

  oni::driver::DeviceBase* deviceOpen(const char* uri, const char*) override {
    VirtualSpec spec;
    if (!parseSpec(uri, &spec)) return nullptr;
    bool unplug;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      unplug = spec.unplugAfter > 0 && !unpluggedOnce_.count(spec.uri);
    }
    auto* device = new VirtualDevice(this, spec, unplug);
    if (!device->valid()) {
      getServices().errorLoggerAppend("face-check virtual device: no recording in %s", spec.dir.c_str());
      delete device;
      return nullptr;
    }
    return device;
  }
  void deviceClose(oni::driver::DeviceBase* device) override { delete device; }

  void shutdown() override {
    stopping_ = true;
    if (hotplug_.joinable()) hotplug_.join();
  }

  // The device `uri` is pulled out (from its own frame thread): OpenNI hears of it at once.
  void unplug(const VirtualSpec& spec) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      unpluggedOnce_[spec.uri] = true;
      present_.erase(spec.uri);
      unpluggedUntil_[spec.uri] = std::chrono::steady_clock::now() + std::chrono::milliseconds(spec.replugMs);
    }
    OniDeviceInfo info = deviceInfo(spec.uri);
    deviceDisconnected(&info);
  }

 private:
  void hotplugLoop() {
    while (!stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::vector<std::string> back;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto now = std::chrono::steady_clock::now();
        for (auto it = unpluggedUntil_.begin(); it != unpluggedUntil_.end();) {
          if (it->second <= now) {
            back.push_back(it->first);
            present_[it->first] = true;
            it = unpluggedUntil_.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (const std::string& uri : back) {
        OniDeviceInfo info = deviceInfo(uri);
        deviceConnected(&info);
      }
    }
  }

  std::mutex mutex_;
  std::map<std::string, bool> present_, unpluggedOnce_;
  std::map<std::string, std::chrono::steady_clock::time_point> unpluggedUntil_;
  std::thread hotplug_;
  std::atomic<bool> stopping_{false};
};

OniStatus VirtualStream::start() {
  started_ = true;
  device_->streamStarted();
  return ONI_STATUS_OK;
}

// As a real driver's: once stop() returns no frame of this stream is being delivered (OpenNI2 tears the
// stream's frame holder down next).
void VirtualStream::stop() {
  started_ = false;
  device_->waitForSend();
}

OniStatus VirtualStream::getProperty(int id, void* data, int* size) {
  const facecheck::CameraIntrinsics& k = device_->index().intrinsics;
  std::lock_guard<std::mutex> lock(mutex_);
  switch (id) {
    case ONI_STREAM_PROPERTY_VIDEO_MODE: return putValue(mode_, data, size);
    case ONI_STREAM_PROPERTY_MIRRORING: return putValue(mirror_, data, size);
    // Reported, as real devices do: OpenNI2's file player drops every frame of a stream recorded without it.
    case ONI_STREAM_PROPERTY_CROPPING:
      if (!cropping_) return ONI_STATUS_NOT_SUPPORTED;
      return putValue(OniCropping{FALSE, 0, 0, mode_.resolutionX, mode_.resolutionY}, data, size);
    case ONI_STREAM_PROPERTY_HORIZONTAL_FOV:
      return putValue(static_cast<float>(2 * std::atan(device_->index().width / (2 * k.fx))), data, size);
    case ONI_STREAM_PROPERTY_VERTICAL_FOV:
      return putValue(static_cast<float>(2 * std::atan(device_->index().height / (2 * k.fy))), data, size);
    case ONI_STREAM_PROPERTY_MAX_VALUE: return putValue(10000, data, size);
    case ONI_STREAM_PROPERTY_MIN_VALUE: return putValue(0, data, size);
    default: return ONI_STATUS_NOT_SUPPORTED;
  }
}

void VirtualStream::send(const CameraFrame& frame, uint64_t timestampUs, int frameIndex, bool registered) {
  OniVideoMode mode;
  bool mirror;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mode = mode_;
    mirror = mirror_;
  }
  const int w = frame.width, h = frame.height;
  const bool depth = type_ == ONI_SENSOR_DEPTH;
  if (depth && !frame.hasDepth()) return;
  OniFrame* out = getServices().acquireFrame();
  if (!out) return;
  const int bpp = depth ? 2 : 3;
  out->dataSize = w * h * bpp;
  out->sensorType = type_;
  out->timestamp = timestampUs;
  out->frameIndex = frameIndex;
  out->width = out->videoMode.resolutionX = w;
  out->height = out->videoMode.resolutionY = h;
  out->videoMode = mode;
  out->croppingEnabled = FALSE;
  out->cropOriginX = out->cropOriginY = 0;
  out->stride = w * bpp;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int sx = mirror ? w - 1 - x : x;
      const size_t o = static_cast<size_t>(y) * w + x;
      if (!depth) {
        std::memcpy(static_cast<uint8_t*>(out->data) + o * 3, &frame.rgb[(static_cast<size_t>(y) * w + sx) * 3], 3);
        continue;
      }
      // Unregistered: the depth camera sees the scene from its own place, beside the colour camera.
      const int dx = registered ? sx : sx + kUnregisteredShiftPx;
      uint16_t mm = dx >= 0 && dx < w ? frame.depth[static_cast<size_t>(y) * w + dx] : 0;
      uint16_t v = mm;
      if (mode.pixelFormat == ONI_PIXEL_FORMAT_DEPTH_100_UM) v = static_cast<uint16_t>(std::min(65535, mm * 10));
      else if (mode.pixelFormat == ONI_PIXEL_FORMAT_SHIFT_9_2) v = facecheck::kinectMmToRaw(mm);
      static_cast<uint16_t*>(out->data)[o] = v;
    }
  }
  raiseNewFrame(out);
  getServices().releaseFrame(out);
}

void VirtualDevice::run() {
  const auto period = std::chrono::microseconds(1000000 / spec_.fps);
  auto due = std::chrono::steady_clock::now();
  int sent = 0;
  int64_t offsetUs = 0;
  const auto& frames = index_.frames;
  const int64_t first = frames.front().timestampUs;
  size_t i = 0;
  CameraFrame frame;
  while (running_) {
    if (i >= frames.size()) {
      if (!spec_.loop) {  // a recording's end: the device goes quiet (it stays connected)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      offsetUs += frames.back().timestampUs - first + 33333;
      i = 0;
    }
    std::this_thread::sleep_until(due);
    due += period;
    if (!facecheck::readFrameFiles(index_, i, &frame).ok()) break;
    const uint64_t ts = static_cast<uint64_t>(frames[i].timestampUs - first + offsetUs);
    {
      std::lock_guard<std::mutex> lock(streamsMutex_);
      // Depth first, as a structured-light camera's depth frame is ready before the colour one.
      for (auto* s : streams_) {
        auto* vs = static_cast<VirtualStream*>(s);
        if (vs->started() && vs->type() == ONI_SENSOR_DEPTH) vs->send(frame, ts, sent, registered_);
      }
      for (auto* s : streams_) {
        auto* vs = static_cast<VirtualStream*>(s);
        if (vs->started() && vs->type() == ONI_SENSOR_COLOR) vs->send(frame, ts, sent, registered_);
      }
    }
    ++i;
    ++sent;
    if (unplug_ && sent >= spec_.unplugAfter) {
      unplug_ = false;
      running_ = false;
      driver_->unplug(spec_);
      return;
    }
  }
}

}  // namespace

ONI_EXPORT_DRIVER(VirtualDriver)
