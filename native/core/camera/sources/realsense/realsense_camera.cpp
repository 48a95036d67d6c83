#include "core/camera/sources/realsense/realsense_camera.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

// rsutil.h defines static helpers this file uses only some of.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <librealsense2/rsutil.h>
#pragma GCC diagnostic pop

namespace facecheck {

namespace {

// How many synced frame sets wait for read(): a live camera keeps only the newest ones (the analysis
// wants the present moment), a recording played frame by frame holds a few so the SDK's reader can work
// ahead while one is analysed.
constexpr size_t kLiveQueue = 2;
constexpr size_t kFileQueue = 4;
constexpr int kWaitStepMs = 50;

struct StreamInfo {
  rs2_stream stream = RS2_STREAM_ANY;
  rs2_format format = RS2_FORMAT_ANY;
  int index = 0, uid = 0, fps = 0, width = 0, height = 0;
};

}  // namespace

RealSenseCamera::RealSenseCamera(RealSenseOptions options) : options_(std::move(options)) {}

RealSenseCamera::~RealSenseCamera() { close(); }

void RealSenseCamera::interrupt() {
  interrupted_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  changed_.notify_all();
}

RealSenseHandle<rs2_frame> RealSenseCamera::hold(rs2_frame* f) const {
  auto api = api_;
  return RealSenseHandle<rs2_frame>(f, [api](rs2_frame* p) { if (p) api->rs2_release_frame(p); });
}

void RealSenseCamera::onSensorFrame(rs2_frame* frame, void* user) {
  auto* self = static_cast<RealSenseCamera*>(user);
  const RealSenseApi& api = *self->api_;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    if (self->stopping_ || !self->syncer_) {
      api.rs2_release_frame(frame);
      return;
    }
  }
  rs2_error* e = nullptr;
  api.rs2_process_frame(self->syncer_.get(), frame, &e);  // takes the frame
  if (e) api.rs2_free_error(e);
}

void RealSenseCamera::onSynced(rs2_frame* frameset, void* user) {
  auto* self = static_cast<RealSenseCamera*>(user);
  const RealSenseApi& api = *self->api_;
  rs2_error* e = nullptr;
  // The syncer also hands on frames it could not match: only a set with depth and colour is a frame.
  bool depth = false, colour = false;
  if (api.rs2_is_frame_extendable_to(frameset, RS2_EXTENSION_COMPOSITE_FRAME, &e) && !e) {
    int n = api.rs2_embedded_frames_count(frameset, &e);
    for (int i = 0; !e && i < n; ++i) {
      rs2_frame* f = api.rs2_extract_frame(frameset, i, &e);
      if (e || !f) break;
      StreamInfo s;
      api.rs2_get_stream_profile_data(api.rs2_get_frame_stream_profile(f, &e), &s.stream, &s.format, &s.index, &s.uid,
                                      &s.fps, &e);
      depth |= s.stream == RS2_STREAM_DEPTH;
      colour |= s.stream == RS2_STREAM_COLOR;
      api.rs2_release_frame(f);
    }
  }
  if (e) api.rs2_free_error(e);
  if (!depth || !colour) {
    api.rs2_release_frame(frameset);
    return;
  }
  std::unique_lock<std::mutex> lock(self->mutex_);
  if (self->lossless()) {
    // The SDK's reader waits for this callback: no frame of the recording is dropped.
    self->changed_.wait(lock, [&] { return self->stopping_ || self->framesets_.size() < kFileQueue; });
  } else {
    while (self->framesets_.size() >= kLiveQueue) {
      api.rs2_release_frame(self->framesets_.front());
      self->framesets_.pop_front();
    }
  }
  if (self->stopping_) {
    api.rs2_release_frame(frameset);
    return;
  }
  self->framesets_.push_back(frameset);
  self->changed_.notify_all();
}

void RealSenseCamera::onDevicesChanged(rs2_device_list* removed, rs2_device_list* added, void* user) {
  auto* self = static_cast<RealSenseCamera*>(user);
  const RealSenseApi& api = *self->api_;
  rs2_error* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    if (self->device_ && removed && api.rs2_device_list_contains(removed, self->device_.get(), &e)) {
      self->disconnected_ = true;
      self->changed_.notify_all();
    }
  }
  if (e) api.rs2_free_error(e);
  if (removed) api.rs2_delete_device_list(removed);
  if (added) api.rs2_delete_device_list(added);
}

Result RealSenseCamera::open() {
  close();
  interrupted_ = false;
  disconnected_ = false;
  if (ended_) return Result::fail(Status::CameraNotConnected, "the recording has ended");
  if (!api_) {
    Result r = loadRealSense(options_.library, &api_);
    if (!r.ok()) return r;
  }
  Result r = openDevice();
  if (r.ok()) r = chooseStreams();
  if (r.ok()) r = startStreams();
  if (!r.ok()) close();
  return r;
}

Result RealSenseCamera::openDevice() {
  auto api = api_;
  rs2_error* e = nullptr;
  rs2_context* ctx = api->rs2_create_context(RS2_API_VERSION, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  context_ = RealSenseHandle<rs2_context>(ctx, [api](rs2_context* c) { api->rs2_delete_context(c); });
  auto deviceHandle = [api](rs2_device* d) { return RealSenseHandle<rs2_device>(d, [api](rs2_device* p) { api->rs2_delete_device(p); }); };

  if (!options_.bag.empty()) {
    struct stat st;
    if (::stat(options_.bag.c_str(), &st) != 0) return Result::fail(Status::CameraNotConnected, "no RealSense recording at " + options_.bag);
    rs2_device* dev = api->rs2_context_add_device(ctx, options_.bag.c_str(), &e);
    if (e) return Result::fail(Status::CameraNotConnected, "cannot play " + options_.bag + ": " + takeRealSenseError(*api, e));
    device_ = RealSenseHandle<rs2_device>(dev, [api, ctx, path = options_.bag](rs2_device* p) {
      api->rs2_delete_device(p);
      rs2_error* err = nullptr;
      api->rs2_context_remove_device(ctx, path.c_str(), &err);
      if (err) api->rs2_free_error(err);
    });
    api->rs2_playback_device_set_real_time(dev, options_.realtime ? 1 : 0, &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    label_ = "RealSense recording " + options_.bag;
  } else {
    api->rs2_set_devices_changed_callback(ctx, &RealSenseCamera::onDevicesChanged, this, &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    RealSenseHandle<rs2_device_list> list(api->rs2_query_devices(ctx, &e), [api](rs2_device_list* l) { if (l) api->rs2_delete_device_list(l); });
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    int count = api->rs2_get_device_count(list.get(), &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    std::string seen;
    for (int i = 0; i < count && !device_; ++i) {
      auto dev = deviceHandle(api->rs2_create_device(list.get(), i, &e));
      if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
      auto info = [&](rs2_camera_info what) -> std::string {
        rs2_error* ie = nullptr;
        if (!api->rs2_supports_device_info(dev.get(), what, &ie) || ie) {
          if (ie) api->rs2_free_error(ie);
          return "";
        }
        const char* v = api->rs2_get_device_info(dev.get(), what, &ie);
        if (ie) api->rs2_free_error(ie);
        return v ? v : "";
      };
      std::string serial = info(RS2_CAMERA_INFO_SERIAL_NUMBER);
      seen += (seen.empty() ? "" : ", ") + serial;
      if (options_.serial.empty() || options_.serial == serial) {
        label_ = info(RS2_CAMERA_INFO_NAME) + " (serial " + serial + ", firmware " + info(RS2_CAMERA_INFO_FIRMWARE_VERSION) + ")";
        std::lock_guard<std::mutex> lock(mutex_);
        device_ = std::move(dev);
      }
    }
    if (!device_) {
      if (count == 0) return Result::fail(Status::CameraNotConnected, "no RealSense camera connected");
      return Result::fail(Status::CameraNotConnected, "no RealSense camera with serial " + options_.serial + " (connected: " + seen + ")");
    }
  }
  rs2_device* streaming = device_.get();
  if (!options_.recordPath.empty()) {
    rs2_device* rec = api->rs2_create_record_device(device_.get(), options_.recordPath.c_str(), &e);
    if (e) return Result::fail(Status::CameraNotConnected, "cannot record to " + options_.recordPath + ": " + takeRealSenseError(*api, e));
    recorder_ = deviceHandle(rec);
    streaming = rec;
  }
  sensorList_ = RealSenseHandle<rs2_sensor_list>(api->rs2_query_sensors(streaming, &e), [api](rs2_sensor_list* l) { if (l) api->rs2_delete_sensor_list(l); });
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  int n = api->rs2_get_sensors_count(sensorList_.get(), &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  for (int i = 0; i < n; ++i) {
    rs2_sensor* s = api->rs2_create_sensor(sensorList_.get(), i, &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    sensors_.emplace_back(s, [api](rs2_sensor* p) { api->rs2_delete_sensor(p); });
  }
  return {};
}

Result RealSenseCamera::chooseStreams() {
  auto api = api_;
  rs2_error* e = nullptr;
  // The offered mode nearest to the one asked for: size first, then rate.
  auto distance = [&](const StreamInfo& s) {
    return (std::abs(s.width - options_.width) + std::abs(s.height - options_.height)) * 1000 + std::abs(s.fps - options_.fps);
  };
  struct Best { const rs2_stream_profile* profile = nullptr; int sensor = -1; StreamInfo info; long score = 0; };
  Best depth, colour, infrared;
  for (size_t si = 0; si < sensors_.size(); ++si) {
    rs2_stream_profile_list* list = api->rs2_get_stream_profiles(sensors_[si].get(), &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    profileLists_.emplace_back(list, [api](rs2_stream_profile_list* l) { api->rs2_delete_stream_profiles_list(l); });
    int count = api->rs2_get_stream_profiles_count(list, &e);
    for (int i = 0; !e && i < count; ++i) {
      const rs2_stream_profile* p = api->rs2_get_stream_profile(list, i, &e);
      if (e) break;
      StreamInfo s;
      api->rs2_get_stream_profile_data(p, &s.stream, &s.format, &s.index, &s.uid, &s.fps, &e);
      if (e) break;
      Best* target = nullptr;
      if (s.stream == RS2_STREAM_DEPTH && s.format == RS2_FORMAT_Z16) target = &depth;
      else if (s.stream == RS2_STREAM_COLOR && s.format == RS2_FORMAT_RGB8) target = &colour;
      else if (s.stream == RS2_STREAM_INFRARED && s.format == RS2_FORMAT_Y8 && s.index <= 1) target = &infrared;
      if (!target) continue;
      api->rs2_get_video_stream_resolution(p, &s.width, &s.height, &e);
      if (e) break;
      long score = distance(s);
      if (!target->profile || score < target->score) *target = Best{p, static_cast<int>(si), s, score};
    }
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  }
  if (!depth.profile) return Result::fail(Status::CameraNotConnected, label_ + " offers no Z16 depth stream");
  if (!colour.profile) return Result::fail(Status::CameraNotConnected, label_ + " offers no RGB8 colour stream");
  depthProfile_ = depth.profile;
  colourProfile_ = colour.profile;
  depthSensor_ = depth.sensor;
  colourSensor_ = colour.sensor;
  // The infrared image lies on depth's pixel grid only when it is the left imager's, at depth's size.
  infraredProfile_ = nullptr;
  if (options_.infrared && infrared.profile && infrared.sensor == depth.sensor && infrared.info.width == depth.info.width &&
      infrared.info.height == depth.info.height && infrared.info.fps == depth.info.fps)
    infraredProfile_ = infrared.profile;

  rs2_sensor* ds = sensors_[depthSensor_].get();
  if (!api->rs2_supports_option(reinterpret_cast<const rs2_options*>(ds), RS2_OPTION_DEPTH_UNITS, &e) || e) {
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    return Result::fail(Status::CameraNotConnected, label_ + " does not report its depth units");
  }
  depthUnits_ = api->rs2_get_option(reinterpret_cast<const rs2_options*>(ds), RS2_OPTION_DEPTH_UNITS, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  if (!(depthUnits_ > 0)) return Result::fail(Status::CameraNotConnected, label_ + " reports depth units of " + std::to_string(depthUnits_));

  // The projector's pattern is what gives a stereo camera depth on smooth skin: on unless told otherwise.
  if (options_.bag.empty() && options_.emitter != "device") {
    auto* opts = reinterpret_cast<rs2_options*>(ds);
    if (api->rs2_supports_option(opts, RS2_OPTION_EMITTER_ENABLED, &e) && !e &&
        !api->rs2_is_option_read_only(opts, RS2_OPTION_EMITTER_ENABLED, &e) && !e)
      api->rs2_set_option(opts, RS2_OPTION_EMITTER_ENABLED, options_.emitter == "on" ? 1.f : 0.f, &e);
    if (e) return Result::fail(Status::CameraNotConnected, "cannot set the emitter: " + takeRealSenseError(*api, e));
  }

  api->rs2_get_extrinsics(depthProfile_, colourProfile_, &depthToColour_, &e);
  if (e) return Result::fail(Status::CameraNotConnected, label_ + " has no depth-to-colour calibration: " + takeRealSenseError(*api, e));
  api->rs2_get_video_stream_intrinsics(colourProfile_, &colourIntrinsics_, &e);
  if (!e) api->rs2_get_video_stream_intrinsics(depthProfile_, &depthIntrinsics_, &e);
  if (e) return Result::fail(Status::CameraNotConnected, label_ + " has no intrinsics: " + takeRealSenseError(*api, e));
  return {};
}

Result RealSenseCamera::startStreams() {
  auto api = api_;
  rs2_error* e = nullptr;
  rs2_processing_block* syncer = api->rs2_create_sync_processing_block(&e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    syncer_ = RealSenseHandle<rs2_processing_block>(syncer, [api](rs2_processing_block* b) { api->rs2_delete_processing_block(b); });
    stopping_ = false;
  }
  api->rs2_start_processing_fptr(syncer, &RealSenseCamera::onSynced, this, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  rs2_processing_block* align = api->rs2_create_align(RS2_STREAM_COLOR, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  align_ = RealSenseHandle<rs2_processing_block>(align, [api](rs2_processing_block* b) { api->rs2_delete_processing_block(b); });
  rs2_frame_queue* queue = api->rs2_create_frame_queue(1, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  aligned_ = RealSenseHandle<rs2_frame_queue>(queue, [api](rs2_frame_queue* q) { api->rs2_delete_frame_queue(q); });
  api->rs2_start_processing_queue(align, queue, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));

  // Each sensor opens all its chosen streams at once (depth and infrared share the stereo module).
  std::vector<int> order = {depthSensor_};
  if (colourSensor_ != depthSensor_) order.push_back(colourSensor_);
  for (int si : order) {
    std::vector<const rs2_stream_profile*> profiles;
    if (si == depthSensor_) {
      profiles.push_back(depthProfile_);
      if (infraredProfile_) profiles.push_back(infraredProfile_);
    }
    if (si == colourSensor_) profiles.push_back(colourProfile_);
    api->rs2_open_multiple(sensors_[si].get(), profiles.data(), static_cast<int>(profiles.size()), &e);
    if (e) return Result::fail(Status::CameraNotConnected, "cannot open " + label_ + ": " + takeRealSenseError(*api, e));
    started_.push_back(-1 - si);  // opened, not yet started
    api->rs2_start(sensors_[si].get(), &RealSenseCamera::onSensorFrame, this, &e);
    if (e) return Result::fail(Status::CameraNotConnected, "cannot start " + label_ + ": " + takeRealSenseError(*api, e));
    started_.back() = si;
  }
  return {};
}

void RealSenseCamera::releaseQueued() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (rs2_frame* f : framesets_) api_->rs2_release_frame(f);
  framesets_.clear();
}

void RealSenseCamera::close() {
  if (!api_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  rs2_error* e = nullptr;
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) {
    int si = *it >= 0 ? *it : -1 - *it;
    if (*it >= 0) api_->rs2_stop(sensors_[si].get(), &e);
    if (e) api_->rs2_free_error(e), e = nullptr;
    api_->rs2_close(sensors_[si].get(), &e);
    if (e) api_->rs2_free_error(e), e = nullptr;
  }
  started_.clear();
  releaseQueued();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    syncer_.reset();
  }
  aligned_.reset();
  align_.reset();
  depthProfile_ = colourProfile_ = infraredProfile_ = nullptr;
  profileLists_.clear();
  sensors_.clear();
  sensorList_.reset();
  recorder_.reset();  // finishes the .bag
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device_.reset();
  }
  context_.reset();
}

bool RealSenseCamera::playbackStopped() const {
  if (options_.bag.empty() || !device_ || !sawFrame_) return false;
  rs2_error* e = nullptr;
  rs2_playback_status s = api_->rs2_playback_device_get_current_status(device_.get(), &e);
  if (e) {
    api_->rs2_free_error(e);
    return false;
  }
  return s == RS2_PLAYBACK_STATUS_STOPPED;
}

Result RealSenseCamera::read(CameraFrame* frame) {
  if (!device_) return Result::fail(Status::CameraNotConnected, "RealSense camera not open");
  const auto start = std::chrono::steady_clock::now();
  rs2_frame* frameset = nullptr;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!framesets_.empty()) {
        frameset = framesets_.front();
        framesets_.pop_front();
        changed_.notify_all();
        break;
      }
      if (interrupted_) return Result::fail(Status::CameraNotConnected, "capture interrupted");
      if (disconnected_) return Result::fail(Status::CameraNotConnected, label_ + " disconnected");
      lock.unlock();
      // A recording that reached its end: played again from the start, or over.
      if (playbackStopped()) {
        if (!options_.loop) {
          ended_ = true;
          return Result::fail(Status::CameraNotConnected, "the recording has ended");
        }
        Result r = open();
        if (!r.ok()) return r;
      }
      lock.lock();
      if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options_.stallMs))
        return Result::fail(Status::CameraNotConnected, label_ + " stopped sending frames");
      changed_.wait_for(lock, std::chrono::milliseconds(kWaitStepMs));
    }
  }
  sawFrame_ = true;
  return takeFrameset(frameset, frame);
}

Result RealSenseCamera::takeFrameset(rs2_frame* frameset, CameraFrame* frame) {
  const RealSenseApi& api = *api_;
  auto original = hold(frameset);
  rs2_error* e = nullptr;
  // The align block takes a reference of its own; the original set is still needed for the infrared image.
  api.rs2_frame_add_ref(frameset, &e);
  if (!e) api.rs2_process_frame(align_.get(), frameset, &e);
  if (e) return Result::fail(Status::CameraNotConnected, "aligning depth to colour failed: " + takeRealSenseError(api, e));
  rs2_frame* alignedRaw = nullptr;
  int got = api.rs2_poll_for_frame(aligned_.get(), &alignedRaw, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
  if (!got || !alignedRaw) return Result::fail(Status::CameraNotConnected, "the SDK's align block gave no frame");
  auto aligned = hold(alignedRaw);

  auto pick = [&](rs2_frame* set, rs2_stream stream) -> RealSenseHandle<rs2_frame> {
    int n = api.rs2_embedded_frames_count(set, &e);
    for (int i = 0; !e && i < n; ++i) {
      auto f = hold(api.rs2_extract_frame(set, i, &e));
      if (e) break;
      StreamInfo s;
      api.rs2_get_stream_profile_data(api.rs2_get_frame_stream_profile(f.get(), &e), &s.stream, &s.format, &s.index, &s.uid, &s.fps, &e);
      if (!e && s.stream == stream) return f;
    }
    return hold(nullptr);
  };
  auto depth = pick(alignedRaw, RS2_STREAM_DEPTH);
  auto colour = pick(alignedRaw, RS2_STREAM_COLOR);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
  if (!depth || !colour) return Result::fail(Status::CameraNotConnected, "the aligned frame set lacks depth or colour");

  const int w = api.rs2_get_frame_width(colour.get(), &e);
  const int h = api.rs2_get_frame_height(colour.get(), &e);
  const int stride = api.rs2_get_frame_stride_in_bytes(colour.get(), &e);
  const auto* rgb = static_cast<const uint8_t*>(api.rs2_get_frame_data(colour.get(), &e));
  const int dw = api.rs2_get_frame_width(depth.get(), &e);
  const int dh = api.rs2_get_frame_height(depth.get(), &e);
  const int dstride = api.rs2_get_frame_stride_in_bytes(depth.get(), &e);
  const auto* z = static_cast<const uint8_t*>(api.rs2_get_frame_data(depth.get(), &e));
  const double tsMs = api.rs2_get_frame_timestamp(colour.get(), &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
  if (dw != w || dh != h) return Result::fail(Status::CameraNotConnected, "aligned depth is not the colour frame's size");

  frame->width = w;
  frame->height = h;
  frame->rgb.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) std::memcpy(&frame->rgb[static_cast<size_t>(y) * w * 3], rgb + static_cast<size_t>(y) * stride, static_cast<size_t>(w) * 3);
  frame->depth.resize(static_cast<size_t>(w) * h);
  const double toMm = depthUnits_ * 1000.0;
  for (int y = 0; y < h; ++y) {
    const auto* row = reinterpret_cast<const uint16_t*>(z + static_cast<size_t>(y) * dstride);
    uint16_t* out = &frame->depth[static_cast<size_t>(y) * w];
    for (int x = 0; x < w; ++x) {
      const long mm = std::lround(row[x] * toMm);
      out[x] = static_cast<uint16_t>(std::min(65535L, mm));
    }
  }
  frame->ir.clear();
  if (infraredProfile_) {
    auto rawDepth = pick(frameset, RS2_STREAM_DEPTH);
    auto ir = pick(frameset, RS2_STREAM_INFRARED);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
    if (rawDepth && ir) mapInfrared(rawDepth.get(), ir.get(), frame);
  }
  if (options_.intrinsicsGiven) {
    frame->intrinsics = options_.intrinsics;
  } else {
    frame->intrinsics.fx = colourIntrinsics_.fx;
    frame->intrinsics.fy = colourIntrinsics_.fy;
    frame->intrinsics.cx = colourIntrinsics_.ppx;
    frame->intrinsics.cy = colourIntrinsics_.ppy;
  }
  // The camera's clock, kept increasing across a replayed recording's restarts.
  int64_t ts = static_cast<int64_t>(std::llround(tsMs * 1000.0)) + tsOffset_;
  if (lastTs_ >= 0 && ts <= lastTs_) {
    tsOffset_ += lastTs_ - ts + 33333;
    ts = lastTs_ + 33333;
  }
  lastTs_ = ts;
  frame->timestampUs = ts;
  frame->sequence = ++sequence_;
  frame->truth = FrameTruth{};
  return {};
}

void RealSenseCamera::mapInfrared(rs2_frame* depth, rs2_frame* infrared, CameraFrame* frame) {
  const RealSenseApi& api = *api_;
  rs2_error* e = nullptr;
  const int dw = api.rs2_get_frame_width(depth, &e), dh = api.rs2_get_frame_height(depth, &e);
  const int dstride = api.rs2_get_frame_stride_in_bytes(depth, &e);
  const int istride = api.rs2_get_frame_stride_in_bytes(infrared, &e);
  const auto* z = static_cast<const uint8_t*>(api.rs2_get_frame_data(depth, &e));
  const auto* ir = static_cast<const uint8_t*>(api.rs2_get_frame_data(infrared, &e));
  if (e) {
    api.rs2_free_error(e);
    return;
  }
  const int w = frame->width, h = frame->height;
  frame->ir.assign(static_cast<size_t>(w) * h, 0);
  std::vector<float> nearest(static_cast<size_t>(w) * h, 0);
  // Each infrared pixel shares its depth pixel's ray (the left imager is depth's reference): carried to
  // the colour image through the camera's calibration, nearest surface kept, as the align block does for
  // depth. Infrared level 0 means "no measurement" here, so a measured 0 is kept as 1.
  for (int v = 0; v < dh; ++v) {
    const auto* zrow = reinterpret_cast<const uint16_t*>(z + static_cast<size_t>(v) * dstride);
    const uint8_t* irow = ir + static_cast<size_t>(v) * istride;
    for (int u = 0; u < dw; ++u) {
      if (!zrow[u]) continue;
      const float metres = zrow[u] * depthUnits_;
      const float pixel[2] = {static_cast<float>(u), static_cast<float>(v)};
      float p[3], q[3], out[2];
      rs2_deproject_pixel_to_point(p, &depthIntrinsics_, pixel, metres);
      rs2_transform_point_to_point(q, &depthToColour_, p);
      rs2_project_point_to_pixel(out, &colourIntrinsics_, q);
      const int x = static_cast<int>(std::lround(out[0])), y = static_cast<int>(std::lround(out[1]));
      if (x < 0 || y < 0 || x >= w || y >= h) continue;
      const size_t i = static_cast<size_t>(y) * w + x;
      if (nearest[i] == 0 || q[2] < nearest[i]) {
        nearest[i] = q[2];
        frame->ir[i] = std::max<uint8_t>(1, irow[u]);
      }
    }
  }
}

}  // namespace facecheck
