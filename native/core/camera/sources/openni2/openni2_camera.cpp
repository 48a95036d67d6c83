#include "core/camera/sources/openni2/openni2_camera.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace facecheck {

namespace {

constexpr int kWaitStepMs = 100;

const char* formatName(OniPixelFormat f) {
  switch (f) {
    case ONI_PIXEL_FORMAT_DEPTH_1_MM: return "DEPTH_1_MM";
    case ONI_PIXEL_FORMAT_DEPTH_100_UM: return "DEPTH_100_UM";
    case ONI_PIXEL_FORMAT_SHIFT_9_2: return "SHIFT_9_2";
    case ONI_PIXEL_FORMAT_SHIFT_9_3: return "SHIFT_9_3";
    case ONI_PIXEL_FORMAT_RGB888: return "RGB888";
    case ONI_PIXEL_FORMAT_YUV422: return "YUV422";
    case ONI_PIXEL_FORMAT_GRAY8: return "GRAY8";
    case ONI_PIXEL_FORMAT_GRAY16: return "GRAY16";
    case ONI_PIXEL_FORMAT_JPEG: return "JPEG";
    case ONI_PIXEL_FORMAT_YUYV: return "YUYV";
    default: return "unknown";
  }
}

bool usableDepth(OniPixelFormat f) { return f == ONI_PIXEL_FORMAT_DEPTH_1_MM || f == ONI_PIXEL_FORMAT_DEPTH_100_UM; }
bool usableColour(OniPixelFormat f) {
  return f == ONI_PIXEL_FORMAT_RGB888 || f == ONI_PIXEL_FORMAT_YUV422 || f == ONI_PIXEL_FORMAT_YUYV;
}

uint8_t clampByte(int v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

// BT.601 limited range, as UVC and PrimeSense cameras send YUV.
void yuvToRgb(int y, int u, int v, uint8_t* out) {
  const int c = y - 16, d = u - 128, e = v - 128;
  out[0] = clampByte((298 * c + 409 * e + 128) >> 8);
  out[1] = clampByte((298 * c - 100 * d - 208 * e + 128) >> 8);
  out[2] = clampByte((298 * c + 516 * d + 128) >> 8);
}

void ONI_CALLBACK_TYPE disconnectedTrampoline(const OniDeviceInfo* info, void* cookie) {
  static_cast<OpenNI2Camera*>(cookie)->onDisconnected(info ? info->uri : nullptr);
}
void ONI_CALLBACK_TYPE ignoreDevice(const OniDeviceInfo*, void*) {}
void ONI_CALLBACK_TYPE ignoreState(const OniDeviceInfo*, OniDeviceState, void*) {}

bool endsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - n + i])) != suffix[i]) return false;
  return true;
}

}  // namespace

void OpenNI2Camera::DeviceCloser::operator()(_OniDevice* d) const { api->deviceClose(d); }
void OpenNI2Camera::StreamCloser::operator()(_OniStream* s) const {
  api->streamStop(s);
  api->streamDestroy(s);
}
void OpenNI2Camera::RecorderCloser::operator()(_OniRecorder* r) const {
  api->recorderStop(r);
  api->recorderDestroy(&r);
}

OpenNI2Camera::OpenNI2Camera(OpenNI2Options options) : options_(std::move(options)) {}

OpenNI2Camera::~OpenNI2Camera() {
  if (!api_) return;
  onOpenNI2Thread([this] {
    closeOnOpenNI2Thread();
    // OpenNI2 itself stays initialised (initialiseOpenNI2Once).
    if (callbacks_) api_->unregisterDeviceCallbacks(callbacks_);
  });
}

Result OpenNI2Camera::open() {
  Result r;
  onOpenNI2Thread([&] { r = openOnOpenNI2Thread(); });
  return r;
}

Result OpenNI2Camera::read(CameraFrame* frame) {
  Result r;
  onOpenNI2Thread([&] { r = readOnOpenNI2Thread(frame); });
  return r;
}

void OpenNI2Camera::close() {
  if (api_) onOpenNI2Thread([this] { closeOnOpenNI2Thread(); });
}

void OpenNI2Camera::onDisconnected(const char* uri) {
  std::lock_guard<std::mutex> lock(uriMutex_);
  if (uri && uri == uri_) disconnected_ = true;
}

Result OpenNI2Camera::initialise() {
  if (!api_) {
    Result r = loadOpenNI2(options_.library, &api_);
    if (!r.ok()) return r;
  }
  if (callbacks_) return {};
  Result r = initialiseOpenNI2Once(*api_);
  if (!r.ok()) return r;
  OniDeviceCallbacks cb{&ignoreDevice, &disconnectedTrampoline, &ignoreState};
  OniCallbackHandle handle = nullptr;
  if (api_->registerDeviceCallbacks(&cb, this, &handle) != ONI_STATUS_OK || !handle)
    return Result::fail(Status::CameraNotConnected, api_->error("cannot register for OpenNI2's device callbacks"));
  callbacks_ = handle;
  return {};
}

Result OpenNI2Camera::openOnOpenNI2Thread() {
  interrupted_ = false;
  if (api_) closeOnOpenNI2Thread();
  if (options_.registration != "auto" && options_.registration != "device" && options_.registration != "converter" &&
      options_.registration != "none")
    return Result::fail(Status::FieldsValidation, "openni2 registration must be auto, device, converter or none");
  Result r = initialise();
  if (!r.ok()) return r;
  if (ended_) return Result::fail(Status::CameraNotConnected, "the recording has ended");

  std::string uri = options_.uri;
  if (uri.empty()) {
    OniDeviceInfo* list = nullptr;
    int count = 0;
    if (api_->getDeviceList(&list, &count) == ONI_STATUS_OK && count > 0) uri = list[0].uri;
    if (list) api_->releaseDeviceList(list);
    if (uri.empty()) return Result::fail(Status::CameraNotConnected, "no OpenNI2 device connected");
  }
  OniDeviceHandle dev = nullptr;
  if (api_->deviceOpen(uri.c_str(), &dev) != ONI_STATUS_OK || !dev)
    return Result::fail(Status::CameraNotConnected, api_->error(("cannot open OpenNI2 device " + uri).c_str()));
  device_ = Device(dev, DeviceCloser{api_.get()});
  OniDeviceInfo info{};
  {
    std::lock_guard<std::mutex> lock(uriMutex_);
    uri_ = api_->deviceGetInfo(dev, &info) == ONI_STATUS_OK ? info.uri : uri;
  }
  disconnected_ = false;
  isFile_ = api_->deviceIsPropertySupported(dev, ONI_DEVICE_PROPERTY_PLAYBACK_SPEED) || endsWith(uri, ".oni");
  if (isFile_) {
    // Recorded timing, and the end of the file is the end of the source unless it loops.
    float speed = 1.0f;
    OniBool repeat = options_.loop ? TRUE : FALSE;
    api_->deviceSetProperty(dev, ONI_DEVICE_PROPERTY_PLAYBACK_SPEED, &speed, sizeof speed);
    api_->deviceSetProperty(dev, ONI_DEVICE_PROPERTY_PLAYBACK_REPEAT_ENABLED, &repeat, sizeof repeat);
  }
  r = openStreams();
  if (!r.ok()) {
    closeOnOpenNI2Thread();
    return r;
  }
  return {};
}

Result OpenNI2Camera::chooseMode(OniSensorType type, OniVideoMode* mode) {
  const bool depth = type == ONI_SENSOR_DEPTH;
  const OniSensorInfo* sensor = api_->deviceGetSensorInfo(device_.get(), type);
  if (!sensor)
    return Result::fail(Status::FieldsValidation, std::string("the OpenNI2 device ") + uri_ + " has no " +
                                                      (depth ? "depth sensor: liveness needs depth" : "colour sensor"));
  const OniVideoMode* best = nullptr;
  long bestCost = 0;
  std::string offered;
  for (int i = 0; i < sensor->numSupportedVideoModes; ++i) {
    const OniVideoMode& m = sensor->pSupportedVideoModes[i];
    char text[64];
    std::snprintf(text, sizeof text, "%s%s %dx%d@%d", offered.empty() ? "" : ", ", formatName(m.pixelFormat),
                  m.resolutionX, m.resolutionY, m.fps);
    offered += text;
    if (!(depth ? usableDepth(m.pixelFormat) : usableColour(m.pixelFormat))) continue;
    // Nearest to the wanted size, then frame rate; millimetres and RGB preferred at equal cost.
    long cost = std::labs(static_cast<long>(m.resolutionX) * m.resolutionY - static_cast<long>(options_.width) * options_.height) * 100 +
                std::labs(m.fps - options_.fps) * 10 +
                (m.pixelFormat == ONI_PIXEL_FORMAT_DEPTH_1_MM || m.pixelFormat == ONI_PIXEL_FORMAT_RGB888 ? 0 : 1);
    if (!best || cost < bestCost) {
      best = &m;
      bestCost = cost;
    }
  }
  if (!best)
    return Result::fail(Status::FieldsValidation,
                        std::string("the OpenNI2 device ") + uri_ + " offers no " +
                            (depth ? "depth in millimetres (DEPTH_1_MM or DEPTH_100_UM; raw disparity formats SHIFT_9_2/SHIFT_9_3 cannot be converted)"
                                   : "colour as RGB888, YUV422 or YUYV") +
                            "; it offers " + (offered.empty() ? "none" : offered));
  *mode = *best;
  return {};
}

Result OpenNI2Camera::openStreams() {
  OniVideoMode colourMode{}, depthMode{};
  Result r = chooseMode(ONI_SENSOR_DEPTH, &depthMode);
  if (!r.ok()) return r;
  r = chooseMode(ONI_SENSOR_COLOR, &colourMode);
  if (!r.ok()) return r;
  OniStreamHandle depth = nullptr, colour = nullptr;
  if (api_->deviceCreateStream(device_.get(), ONI_SENSOR_DEPTH, &depth) != ONI_STATUS_OK || !depth)
    return Result::fail(Status::CameraNotConnected, api_->error("cannot create the OpenNI2 depth stream"));
  depthStream_ = Stream(depth, StreamCloser{api_.get()});
  if (api_->deviceCreateStream(device_.get(), ONI_SENSOR_COLOR, &colour) != ONI_STATUS_OK || !colour)
    return Result::fail(Status::CameraNotConnected, api_->error("cannot create the OpenNI2 colour stream"));
  colourStream_ = Stream(colour, StreamCloser{api_.get()});
  if (!isFile_) {  // a recording's modes are fixed
    api_->streamSetProperty(depth, ONI_STREAM_PROPERTY_VIDEO_MODE, &depthMode, sizeof depthMode);
    api_->streamSetProperty(colour, ONI_STREAM_PROPERTY_VIDEO_MODE, &colourMode, sizeof colourMode);
  }
  // What the streams really run at (the driver may have kept its own mode).
  int size = sizeof colourMode_;
  if (api_->streamGetProperty(colour, ONI_STREAM_PROPERTY_VIDEO_MODE, &colourMode_, &size) != ONI_STATUS_OK) colourMode_ = colourMode;
  size = sizeof depthMode_;
  if (api_->streamGetProperty(depth, ONI_STREAM_PROPERTY_VIDEO_MODE, &depthMode_, &size) != ONI_STATUS_OK) depthMode_ = depthMode;
  if (!usableDepth(depthMode_.pixelFormat))
    return Result::fail(Status::FieldsValidation, std::string("the OpenNI2 depth stream runs in ") + formatName(depthMode_.pixelFormat) +
                                                      ", which cannot be converted to millimetres (DEPTH_1_MM or DEPTH_100_UM needed)");
  if (isFile_) {
    // OpenNI2's file driver hands a frame over only after reading its stream's recorded cropping, and
    // silently drops every frame of a stream recorded without it (docs/device.md): say so, not "no frame".
    for (OniStreamHandle s : {depth, colour}) {
      OniCropping crop{};
      int cs = sizeof crop;
      if (api_->streamGetProperty(s, ONI_STREAM_PROPERTY_CROPPING, &crop, &cs) != ONI_STATUS_OK)
        return Result::fail(Status::FieldsValidation,
                            "the recording " + uri_ + " was made from a stream without the cropping property: OpenNI2's file driver plays none of its frames");
    }
  }
  if (!usableColour(colourMode_.pixelFormat))
    return Result::fail(Status::FieldsValidation, std::string("the OpenNI2 colour stream runs in ") + formatName(colourMode_.pixelFormat) +
                                                      " (RGB888, YUV422 or YUYV needed)");

  // Mirroring off: OpenNI2 devices start mirrored (a webcam's habit); liveness wants the scene as it is.
  mirrorInSoftware_ = false;
  for (OniStreamHandle s : {depth, colour}) {
    OniBool off = FALSE, now = FALSE;
    if (!isFile_) api_->streamSetProperty(s, ONI_STREAM_PROPERTY_MIRRORING, &off, sizeof off);
    size = sizeof now;
    if (api_->streamGetProperty(s, ONI_STREAM_PROPERTY_MIRRORING, &now, &size) == ONI_STATUS_OK && now) mirrorInSoftware_ = true;
  }
  if (mirrorInSoftware_) {
    // Both streams then un-mirrored in software, so they must both be mirrored (else the grids disagree).
    OniBool d = FALSE, c = FALSE;
    int sd = sizeof d, sc = sizeof c;
    api_->streamGetProperty(depth, ONI_STREAM_PROPERTY_MIRRORING, &d, &sd);
    api_->streamGetProperty(colour, ONI_STREAM_PROPERTY_MIRRORING, &c, &sc);
    if (!d || !c) return Result::fail(Status::FieldsValidation, "the OpenNI2 device mirrors only one of its streams and will not turn mirroring off");
  }

  r = setUpRegistration();
  if (!r.ok()) return r;
  api_->deviceEnableDepthColorSync(device_.get());  // frame sync where the driver offers it; optional
  readIntrinsics();

  if (api_->streamStart(depth) != ONI_STATUS_OK) return Result::fail(Status::CameraNotConnected, api_->error("cannot start the OpenNI2 depth stream"));
  if (api_->streamStart(colour) != ONI_STATUS_OK) return Result::fail(Status::CameraNotConnected, api_->error("cannot start the OpenNI2 colour stream"));
  const int w = colourMode_.resolutionX, h = colourMode_.resolutionY;
  rgb_.assign(static_cast<size_t>(w) * h * 3, 0);
  depth_.assign(static_cast<size_t>(w) * h, 0);
  haveDepth_ = haveColour_ = false;
  pairsByClock_ = true;
  unpaired_ = 0;
  return startRecorder();
}

Result OpenNI2Camera::setUpRegistration() {
  mapDepth_ = false;
  if (options_.registration == "none") return {};
  OniDeviceHandle dev = device_.get();
  if (options_.registration != "converter") {
    OniImageRegistrationMode mode = ONI_IMAGE_REGISTRATION_DEPTH_TO_COLOR, now = ONI_IMAGE_REGISTRATION_OFF;
    int size = sizeof now;
    // A recording keeps the registration it was made with: read it back rather than set it.
    if (!isFile_ && api_->deviceIsImageRegistrationModeSupported(dev, mode))
      api_->deviceSetProperty(dev, ONI_DEVICE_PROPERTY_IMAGE_REGISTRATION, &mode, sizeof mode);
    if (api_->deviceGetProperty(dev, ONI_DEVICE_PROPERTY_IMAGE_REGISTRATION, &now, &size) == ONI_STATUS_OK &&
        now == ONI_IMAGE_REGISTRATION_DEPTH_TO_COLOR)
      return {};
    if (options_.registration == "device")
      return Result::fail(Status::FieldsValidation, "the OpenNI2 device " + uri_ + " cannot register depth to colour (IMAGE_REGISTRATION_DEPTH_TO_COLOR)");
    // OpenNI2's recorder keeps stream properties but not the device's registration mode, and its file
    // driver maps no pixels: a recording is taken as registered, which the ones face-check records are
    // (docs/device.md).
    if (isFile_) return {};
  }
  // Fallback: OpenNI2's per-pixel depth-to-colour mapping, if this driver implements it.
  int cx = 0, cy = 0;
  if (api_->depthToColor(depthStream_.get(), colourStream_.get(), depthMode_.resolutionX / 2, depthMode_.resolutionY / 2, 1000, &cx, &cy) ==
      ONI_STATUS_OK) {
    mapDepth_ = true;
    return {};
  }
  return Result::fail(Status::FieldsValidation,
                      "the OpenNI2 device " + uri_ +
                          " can neither register depth to colour nor map depth pixels to colour; set [camera.openni2] registration = none only if its depth and colour images are already aligned");
}

void OpenNI2Camera::readIntrinsics() {
  const int w = colourMode_.resolutionX, h = colourMode_.resolutionY;
  // The colour camera's fields of view; registered depth shares its grid, so the depth stream's are the
  // fallback when the colour stream does not report them.
  float hfov = 0, vfov = 0;
  for (OniStreamHandle s : {colourStream_.get(), depthStream_.get()}) {
    int size = sizeof hfov;
    if (api_->streamGetProperty(s, ONI_STREAM_PROPERTY_HORIZONTAL_FOV, &hfov, &size) != ONI_STATUS_OK) hfov = 0;
    size = sizeof vfov;
    if (api_->streamGetProperty(s, ONI_STREAM_PROPERTY_VERTICAL_FOV, &vfov, &size) != ONI_STATUS_OK) vfov = 0;
    if (hfov > 0.1f && hfov < 3.0f && vfov > 0.1f && vfov < 3.0f) break;
    hfov = vfov = 0;
  }
  if (hfov > 0) {
    intrinsics_.fx = (w / 2.0) / std::tan(hfov / 2.0);
    intrinsics_.fy = (h / 2.0) / std::tan(vfov / 2.0);
  } else {
    // No field of view reported: a 58 x 45 degree structured-light camera, scaled to this width.
    intrinsics_.fx = intrinsics_.fy = (w / 2.0) / std::tan(58.0 * M_PI / 360.0);
  }
  intrinsics_.cx = (w - 1) / 2.0;
  intrinsics_.cy = (h - 1) / 2.0;
}

Result OpenNI2Camera::startRecorder() {
  if (options_.recordPath.empty() || recorder_) return {};
  OniRecorderHandle rec = nullptr;
  if (api_->createRecorder(options_.recordPath.c_str(), &rec) != ONI_STATUS_OK || !rec)
    return Result::fail(Status::FieldsValidation, api_->error(("cannot create the OpenNI2 recording " + options_.recordPath).c_str()));
  recorder_ = Recorder(rec, RecorderCloser{api_.get()});
  // Lossless: the depth is what liveness measures.
  if (api_->recorderAttachStream(rec, depthStream_.get(), FALSE) != ONI_STATUS_OK ||
      api_->recorderAttachStream(rec, colourStream_.get(), FALSE) != ONI_STATUS_OK || api_->recorderStart(rec) != ONI_STATUS_OK)
    return Result::fail(Status::FieldsValidation, api_->error("cannot start the OpenNI2 recorder"));
  return {};
}

void OpenNI2Camera::takeColour(const OniFrame& f) {
  const int w = colourMode_.resolutionX, h = colourMode_.resolutionY;
  if (f.width != w || f.height != h) return;
  const uint8_t* base = static_cast<const uint8_t*>(f.data);
  const int stride = f.stride > 0 ? f.stride : w * (f.videoMode.pixelFormat == ONI_PIXEL_FORMAT_RGB888 ? 3 : 2);
  const OniPixelFormat format = f.videoMode.pixelFormat;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = base + static_cast<size_t>(y) * stride;
    uint8_t* out = rgb_.data() + static_cast<size_t>(y) * w * 3;
    if (format == ONI_PIXEL_FORMAT_RGB888) {
      std::memcpy(out, row, static_cast<size_t>(w) * 3);
    } else {
      // Two pixels per 4 bytes: YUV422 is U Y1 V Y2, YUYV is Y1 U Y2 V.
      const bool uyvy = format == ONI_PIXEL_FORMAT_YUV422;
      for (int x = 0; x + 1 < w; x += 2) {
        const uint8_t* p = row + x * 2;
        const int y1 = uyvy ? p[1] : p[0], u = uyvy ? p[0] : p[1], y2 = uyvy ? p[3] : p[2], v = uyvy ? p[2] : p[3];
        yuvToRgb(y1, u, v, out + x * 3);
        yuvToRgb(y2, u, v, out + (x + 1) * 3);
      }
    }
    if (mirrorInSoftware_)
      for (int x = 0; x < w / 2; ++x) std::swap_ranges(out + x * 3, out + x * 3 + 3, out + (w - 1 - x) * 3);
  }
  colourTs_ = static_cast<int64_t>(f.timestamp);
  haveColour_ = true;
}

void OpenNI2Camera::takeDepth(const OniFrame& f) {
  const int w = colourMode_.resolutionX, h = colourMode_.resolutionY;
  const int dw = f.width, dh = f.height;
  if (dw <= 0 || dh <= 0) return;
  const uint8_t* base = static_cast<const uint8_t*>(f.data);
  const int stride = f.stride > 0 ? f.stride : dw * 2;
  const bool tenths = f.videoMode.pixelFormat == ONI_PIXEL_FORMAT_DEPTH_100_UM;
  auto mm = [&](int x, int y) -> uint16_t {
    uint16_t v;
    std::memcpy(&v, base + static_cast<size_t>(y) * stride + x * 2, 2);
    return tenths ? static_cast<uint16_t>((v + 5) / 10) : v;
  };
  if (mapDepth_) {
    // Each depth pixel to where the colour camera sees it; the nearest surface wins.
    std::fill(depth_.begin(), depth_.end(), 0);
    for (int y = 0; y < dh; ++y)
      for (int x = 0; x < dw; ++x) {
        const uint16_t z = mm(x, y);
        if (!z) continue;
        int cx = 0, cy = 0;
        if (api_->depthToColor(depthStream_.get(), colourStream_.get(), x, y, z, &cx, &cy) != ONI_STATUS_OK) continue;
        if (cx < 0 || cy < 0 || cx >= w || cy >= h) continue;
        uint16_t& d = depth_[static_cast<size_t>(cy) * w + cx];
        if (!d || z < d) d = z;
      }
  } else {
    // Registered depth lies on the colour grid, scaled when its resolution differs (nearest pixel).
    for (int y = 0; y < h; ++y) {
      const int sy = static_cast<int>(static_cast<int64_t>(y) * dh / h);
      for (int x = 0; x < w; ++x) depth_[static_cast<size_t>(y) * w + x] = mm(static_cast<int>(static_cast<int64_t>(x) * dw / w), sy);
    }
  }
  if (mirrorInSoftware_)
    for (int y = 0; y < h; ++y) std::reverse(depth_.begin() + static_cast<ptrdiff_t>(y) * w, depth_.begin() + static_cast<ptrdiff_t>(y + 1) * w);
  depthTs_ = static_cast<int64_t>(f.timestamp);
  haveDepth_ = true;
}

Result OpenNI2Camera::readOnOpenNI2Thread(CameraFrame* frame) {
  if (!device_) return Result::fail(Status::CameraNotConnected, "OpenNI2 device not open");
  OniStreamHandle streams[2] = {depthStream_.get(), colourStream_.get()};
  const int64_t start = steadyMicros();
  while (!(haveDepth_ && haveColour_)) {
    if (interrupted_) return Result::fail(Status::CameraNotConnected, "capture interrupted");
    if (disconnected_) return Result::fail(Status::CameraNotConnected, "OpenNI2 device " + uri_ + " disconnected");
    if ((steadyMicros() - start) / 1000 > options_.stallMs) {
      if (isFile_ && !options_.loop) {
        ended_ = true;
        return Result::fail(Status::CameraNotConnected, "the recording has ended");
      }
      return Result::fail(Status::CameraNotConnected, "OpenNI2 device " + uri_ + " stopped sending frames");
    }
    int index = -1;
    OniStatus s = api_->waitForAnyStream(streams, 2, &index, kWaitStepMs);
    if (s == ONI_STATUS_TIME_OUT) continue;
    if (s != ONI_STATUS_OK || index < 0 || index > 1)
      return Result::fail(Status::CameraNotConnected, api_->error(("OpenNI2 device " + uri_ + " failed").c_str()));
    OniFrame* f = nullptr;
    if (api_->streamReadFrame(streams[index], &f) != ONI_STATUS_OK || !f) continue;
    if (index == 0) takeDepth(*f);
    else takeColour(*f);
    api_->frameRelease(f);
    if (haveDepth_ && haveColour_ && !pairsByClock_) continue;
    if (haveDepth_ && haveColour_) {
      // A pair is a depth and a colour frame of the same moment: when one stream ran ahead (a frame of
      // it arrived before its partner was read), keep waiting for the partner of the newer one. Devices
      // whose two streams do not share a clock never pair so: after a few tries, pairs are taken as they
      // come.
      const int64_t halfPeriod = 500000 / std::max(1, colourMode_.fps);
      if (std::llabs(depthTs_ - colourTs_) <= halfPeriod) {
        unpaired_ = 0;
      } else if (++unpaired_ > 4) {
        pairsByClock_ = false;
      } else if (depthTs_ < colourTs_) {
        haveDepth_ = false;
      } else {
        haveColour_ = false;
      }
    }
  }
  haveDepth_ = haveColour_ = false;
  // The device's own clock (microseconds), kept increasing across reconnects and file loops.
  int64_t ts = colourTs_ + tsOffset_;
  if (lastTs_ >= 0 && ts <= lastTs_) {  // a new session or a recording's loop: the clock restarted
    tsOffset_ += lastTs_ + 33333 - ts;
    ts = colourTs_ + tsOffset_;
  }
  lastTs_ = ts;
  frame->width = colourMode_.resolutionX;
  frame->height = colourMode_.resolutionY;
  frame->rgb = rgb_;
  frame->depth = depth_;
  frame->intrinsics = intrinsics_;
  frame->sequence = sequence_++;
  frame->timestampUs = ts;
  frame->truth = FrameTruth{};
  return {};
}

void OpenNI2Camera::closeOnOpenNI2Thread() {
  recorder_.reset();
  // Frame sync off and both streams stopped before either is destroyed: OpenNI2 would otherwise rebuild
  // its sync group around the remaining stream while the driver still delivers to it.
  if (device_) api_->deviceDisableDepthColorSync(device_.get());
  if (colourStream_) api_->streamStop(colourStream_.get());
  if (depthStream_) api_->streamStop(depthStream_.get());
  colourStream_.reset();
  depthStream_.reset();
  device_.reset();
  std::lock_guard<std::mutex> lock(uriMutex_);
  uri_.clear();
}

}  // namespace facecheck
