#include "core/camera/sources/freenect/freenect_camera.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cstdlib>
#include <cstring>

#include <libfreenect.h>

#include "core/camera/recording.h"

namespace facecheck {

namespace {
constexpr int kWidth = 640, kHeight = 480;
// libfreenect's callbacks are plain function pointers: they find their camera through the device's
// user pointer, read with the loaded library's freenect_get_user.
std::atomic<decltype(&freenect_get_user)> gGetUser{nullptr};

void depthTrampoline(freenect_device* dev, void* data, uint32_t) {
  auto getUser = gGetUser.load();
  if (auto* self = getUser ? static_cast<FreenectCamera*>(getUser(dev)) : nullptr) self->onDepth(data);
}
void videoTrampoline(freenect_device* dev, void* data, uint32_t) {
  auto getUser = gGetUser.load();
  if (auto* self = getUser ? static_cast<FreenectCamera*>(getUser(dev)) : nullptr) self->onVideo(data);
}
}  // namespace

struct FreenectCamera::Api {
  void* handle = nullptr;
  bool registration = false;  // the library offers registered depth (real libfreenect)
  decltype(&freenect_init) init = nullptr;
  decltype(&freenect_shutdown) shutdown = nullptr;
  decltype(&freenect_set_log_level) setLogLevel = nullptr;
  decltype(&freenect_select_subdevices) selectSubdevices = nullptr;
  decltype(&freenect_num_devices) numDevices = nullptr;
  decltype(&freenect_open_device) openDevice = nullptr;
  decltype(&freenect_close_device) closeDevice = nullptr;
  decltype(&freenect_set_user) setUser = nullptr;
  decltype(&freenect_get_user) getUser = nullptr;
  decltype(&freenect_set_depth_callback) setDepthCallback = nullptr;
  decltype(&freenect_set_video_callback) setVideoCallback = nullptr;
  decltype(&freenect_find_video_mode) findVideoMode = nullptr;
  decltype(&freenect_find_depth_mode) findDepthMode = nullptr;
  decltype(&freenect_set_video_mode) setVideoMode = nullptr;
  decltype(&freenect_set_depth_mode) setDepthMode = nullptr;
  decltype(&freenect_start_depth) startDepth = nullptr;
  decltype(&freenect_start_video) startVideo = nullptr;
  decltype(&freenect_stop_depth) stopDepth = nullptr;
  decltype(&freenect_stop_video) stopVideo = nullptr;
  decltype(&freenect_process_events_timeout) processEventsTimeout = nullptr;
};

FreenectCamera::FreenectCamera(FreenectOptions options) : options_(std::move(options)) {}

FreenectCamera::~FreenectCamera() {
  close();
  if (api_) {
    if (api_->handle) dlclose(api_->handle);
    delete api_;
  }
}

Result FreenectCamera::loadApi() {
  if (api_) return {};
  void* h = dlopen(options_.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return Result::fail(Status::CameraNotConnected, std::string("libfreenect not available: ") + dlerror());
  auto* api = new Api();
  api->handle = h;
  bool ok = true;
  auto sym = [&](const char* name, auto* fn) {
    void* p = dlsym(h, name);
    if (!p) ok = false;
    std::memcpy(fn, &p, sizeof p);
  };
  sym("freenect_init", &api->init);
  sym("freenect_shutdown", &api->shutdown);
  sym("freenect_set_log_level", &api->setLogLevel);
  sym("freenect_select_subdevices", &api->selectSubdevices);
  sym("freenect_num_devices", &api->numDevices);
  sym("freenect_open_device", &api->openDevice);
  sym("freenect_close_device", &api->closeDevice);
  sym("freenect_set_user", &api->setUser);
  sym("freenect_get_user", &api->getUser);
  sym("freenect_set_depth_callback", &api->setDepthCallback);
  sym("freenect_set_video_callback", &api->setVideoCallback);
  sym("freenect_find_video_mode", &api->findVideoMode);
  sym("freenect_find_depth_mode", &api->findDepthMode);
  sym("freenect_set_video_mode", &api->setVideoMode);
  sym("freenect_set_depth_mode", &api->setDepthMode);
  sym("freenect_start_depth", &api->startDepth);
  sym("freenect_start_video", &api->startVideo);
  sym("freenect_stop_depth", &api->stopDepth);
  sym("freenect_stop_video", &api->stopVideo);
  sym("freenect_process_events_timeout", &api->processEventsTimeout);
  // Only the real library has the registration functions; fakenect (libfreenect's replay library)
  // supports the raw 11-bit depth mode only, and aborts on any other.
  api->registration = dlsym(h, "freenect_camera_to_world") != nullptr;
  if (!ok) {
    dlclose(h);
    delete api;
    return Result::fail(Status::CameraNotConnected, options_.library + " lacks libfreenect functions");
  }
  api_ = api;
  gGetUser = api->getUser;
  return {};
}

Result FreenectCamera::open() {
  interrupted_ = false;
  Result r = loadApi();
  if (!r.ok()) return r;
  close();
  if (options_.depthMode != "auto" && options_.depthMode != "registered" && options_.depthMode != "raw")
    return Result::fail(Status::FieldsValidation, "freenect depth mode must be auto, registered or raw");
  if (options_.depthMode == "registered") raw_ = false;
  else if (options_.depthMode == "raw") raw_ = true;
  else raw_ = !api_->registration;
  if (!api_->registration) {
    // fakenect: it exits the process when its recording is missing, so check first.
    const char* path = std::getenv("FAKENECT_PATH");
    struct stat st;
    if (!path || ::stat((std::string(path) + "/INDEX.txt").c_str(), &st) != 0)
      return Result::fail(Status::CameraNotConnected, "fakenect library without a recording (FAKENECT_PATH/INDEX.txt)");
    if (!raw_) return Result::fail(Status::FieldsValidation, "fakenect supports only depth mode raw");
  }
  freenect_context* ctx = nullptr;
  if (api_->init(&ctx, nullptr) < 0 || !ctx) return Result::fail(Status::CameraNotConnected, "freenect_init failed");
  ctx_ = ctx;
  api_->setLogLevel(ctx, FREENECT_LOG_ERROR);
  api_->selectSubdevices(ctx, FREENECT_DEVICE_CAMERA);
  if (api_->numDevices(ctx) <= options_.deviceIndex) {
    close();
    return Result::fail(Status::CameraNotConnected, "no Kinect connected");
  }
  freenect_device* dev = nullptr;
  if (api_->openDevice(ctx, &dev, options_.deviceIndex) < 0 || !dev) {
    close();
    return Result::fail(Status::CameraNotConnected, "cannot open the Kinect");
  }
  dev_ = dev;
  api_->setUser(dev, this);
  api_->setDepthCallback(dev, &depthTrampoline);
  api_->setVideoCallback(dev, &videoTrampoline);
  freenect_frame_mode video = api_->findVideoMode(FREENECT_RESOLUTION_MEDIUM, FREENECT_VIDEO_RGB);
  freenect_frame_mode depth =
      api_->findDepthMode(FREENECT_RESOLUTION_MEDIUM, raw_ ? FREENECT_DEPTH_11BIT : FREENECT_DEPTH_REGISTERED);
  if (!video.is_valid || !depth.is_valid || video.width != kWidth || video.height != kHeight ||
      api_->setVideoMode(dev, video) < 0 || api_->setDepthMode(dev, depth) < 0 || api_->startVideo(dev) < 0 ||
      api_->startDepth(dev) < 0) {
    close();
    return Result::fail(Status::CameraNotConnected, "cannot start the Kinect's colour and depth streams");
  }
  depth_.assign(static_cast<size_t>(kWidth) * kHeight, 0);
  video_.assign(static_cast<size_t>(kWidth) * kHeight * 3, 0);
  haveDepth_ = haveVideo_ = false;
  return {};
}

void FreenectCamera::onDepth(const void* data) {
  const uint16_t* in = static_cast<const uint16_t*>(data);
  const size_t n = depth_.size();
  if (raw_) {
    for (size_t i = 0; i < n; ++i) depth_[i] = kinectRawToMm(in[i]);  // 2047: no measurement -> 0
  } else {
    // FREENECT_DEPTH_REGISTERED: millimetres, FREENECT_DEPTH_MM_NO_VALUE (0) where unknown.
    std::memcpy(depth_.data(), in, n * sizeof(uint16_t));
  }
  haveDepth_ = true;
}

void FreenectCamera::onVideo(const void* data) {
  std::memcpy(video_.data(), data, video_.size());
  haveVideo_ = true;
}

Result FreenectCamera::read(CameraFrame* frame) {
  if (!dev_) return Result::fail(Status::CameraNotConnected, "Kinect not open");
  const int64_t start = steadyMicros();
  while (!(haveDepth_ && haveVideo_)) {
    if (interrupted_) return Result::fail(Status::CameraNotConnected, "capture interrupted");
    timeval timeout{0, 100000};
    if (api_->processEventsTimeout(static_cast<freenect_context*>(ctx_), &timeout) < 0)
      return Result::fail(Status::CameraNotConnected, "Kinect disconnected (USB error)");
    if ((steadyMicros() - start) / 1000 > options_.stallMs)
      return Result::fail(Status::CameraNotConnected, "Kinect stopped sending frames");
  }
  haveDepth_ = haveVideo_ = false;
  frame->width = kWidth;
  frame->height = kHeight;
  frame->rgb = video_;
  frame->depth = depth_;
  frame->intrinsics = options_.intrinsics;
  frame->sequence = sequence_++;
  frame->timestampUs = steadyMicros();
  frame->truth = FrameTruth{};
  return {};
}

void FreenectCamera::close() {
  if (!api_) return;
  if (dev_) {
    auto* dev = static_cast<freenect_device*>(dev_);
    api_->stopDepth(dev);
    api_->stopVideo(dev);
    api_->closeDevice(dev);
    dev_ = nullptr;
  }
  if (ctx_) {
    api_->shutdown(static_cast<freenect_context*>(ctx_));
    ctx_ = nullptr;
  }
}

}  // namespace facecheck
