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

// How many matched frame sets wait for read(): a live camera keeps only the newest ones (the analysis
// wants the present moment); a recording played frame by frame holds the SDK's reader once kFileQueue wait.
constexpr size_t kLiveQueue = 2;
constexpr size_t kFileQueue = 4;
constexpr size_t kPendingPerStream = 32;  // frames of one stream waiting for their partners
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

int RealSenseCamera::streamSlot(rs2_frame* frame) const {
  rs2_error* e = nullptr;
  StreamInfo s;
  api_->rs2_get_stream_profile_data(api_->rs2_get_frame_stream_profile(frame, &e), &s.stream, &s.format, &s.index, &s.uid,
                                    &s.fps, &e);
  if (e) {
    api_->rs2_free_error(e);
    return -1;
  }
  if (s.stream == RS2_STREAM_DEPTH) return kDepth;
  if (s.stream == RS2_STREAM_COLOR) return kColour;
  if (s.stream == RS2_STREAM_INFRARED) return kInfrared;
  return -1;
}

void RealSenseCamera::onSensorFrame(rs2_frame* frame, void* user) {
  auto* self = static_cast<RealSenseCamera*>(user);
  const RealSenseApi& api = *self->api_;
  const int slot = self->streamSlot(frame);
  rs2_error* e = nullptr;
  const double ts = api.rs2_get_frame_timestamp(frame, &e);
  if (e) api.rs2_free_error(e);
  std::unique_lock<std::mutex> lock(self->mutex_);
  // Playing a recording frame by frame: the SDK's reader (in its real-time mode) waits for this callback,
  // so holding it here while sets wait loses none.
  if (self->lossless())
    self->changed_.wait(lock, [&] { return self->stopping_ || self->framesets_.size() < kFileQueue; });
  if (self->stopping_ || slot < 0 || e) {
    api.rs2_release_frame(frame);
    return;
  }
  auto& pending = self->pending_[slot];
  pending.push_back(Pending{frame, ts});
  while (pending.size() > kPendingPerStream) {
    api.rs2_release_frame(pending.front().frame);
    pending.pop_front();
  }
  self->matchPending();
}

void RealSenseCamera::matchPending() {
  // A set is one frame of each stream from the same moment: the fronts of the per-stream queues within half
  // a frame period of each other. A front that is older than that has no partner left: it is dropped.
  const int slots = infraredProfile_ ? 3 : 2;
  for (;;) {
    for (int i = 0; i < slots; ++i)
      if (pending_[i].empty()) return;
    int oldest = 0, newest = 0;
    for (int i = 1; i < slots; ++i) {
      if (pending_[i].front().ts < pending_[oldest].front().ts) oldest = i;
      if (pending_[i].front().ts > pending_[newest].front().ts) newest = i;
    }
    if (pending_[newest].front().ts - pending_[oldest].front().ts > halfPeriodMs_) {
      api_->rs2_release_frame(pending_[oldest].front().frame);
      pending_[oldest].pop_front();
      continue;
    }
    FrameSet set{};
    for (int i = 0; i < slots; ++i) {
      set[i] = pending_[i].front().frame;
      pending_[i].pop_front();
    }
    if (!lossless()) {
      while (framesets_.size() >= kLiveQueue) {
        releaseSet(framesets_.front());
        framesets_.pop_front();
      }
    }
    framesets_.push_back(set);
    changed_.notify_all();
  }
}

void RealSenseCamera::releaseSet(const FrameSet& set) const {
  for (rs2_frame* f : set)
    if (f) api_->rs2_release_frame(f);
}

void RealSenseCamera::onCompose(rs2_frame* trigger, rs2_source* source, void* user) {
  auto* self = static_cast<RealSenseCamera*>(user);
  const RealSenseApi& api = *self->api_;
  rs2_error* e = nullptr;
  // The set read() is composing: one composite frame of it, references of its own.
  std::vector<rs2_frame*> frames;
  for (rs2_frame* f : self->composing_) {
    if (!f) continue;
    api.rs2_frame_add_ref(f, &e);
    if (e) break;
    frames.push_back(f);
  }
  if (!e) {
    rs2_frame* composite = api.rs2_allocate_composite_frame(source, frames.data(), static_cast<int>(frames.size()), &e);
    if (!e) api.rs2_synthetic_frame_ready(source, composite, &e);
  }
  if (e) api.rs2_free_error(e);
  api.rs2_release_frame(trigger);
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
  lastRawTs_ = -1;
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
    // Always the SDK's real-time mode: the mode in which its reader waits for each frame callback (its
    // other mode keeps a few frames per stream and drops the oldest); realtime = false then holds the reader
    // in the callback until read() takes the sets waiting.
    api->rs2_playback_device_set_real_time(dev, 1, &e);
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
  halfPeriodMs_ = 500.0 / std::max(1, std::max(depth.info.fps, colour.info.fps));
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }
  rs2_processing_block* composer = api->rs2_create_processing_block_fptr(&RealSenseCamera::onCompose, this, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  composer_ = RealSenseHandle<rs2_processing_block>(composer, [api](rs2_processing_block* b) { api->rs2_delete_processing_block(b); });
  rs2_frame_queue* composed = api->rs2_create_frame_queue(1, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  composed_ = RealSenseHandle<rs2_frame_queue>(composed, [api](rs2_frame_queue* q) { api->rs2_delete_frame_queue(q); });
  api->rs2_start_processing_queue(composer, composed, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  rs2_processing_block* align = api->rs2_create_align(RS2_STREAM_COLOR, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  align_ = RealSenseHandle<rs2_processing_block>(align, [api](rs2_processing_block* b) { api->rs2_delete_processing_block(b); });
  rs2_frame_queue* queue = api->rs2_create_frame_queue(1, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  aligned_ = RealSenseHandle<rs2_frame_queue>(queue, [api](rs2_frame_queue* q) { api->rs2_delete_frame_queue(q); });
  api->rs2_start_processing_queue(align, queue, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));

  // A recording waits, paused, until every sensor runs: its reader would otherwise drop the first frames of
  // the streams not started yet.
  if (!options_.bag.empty()) setPaused(true);
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
  if (!options_.bag.empty()) {
    // From its start: what was read before the pause is delivered again and skipped by its timestamp.
    api->rs2_playback_seek(device_.get(), 0, &e);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
    setPaused(false);
  }
  return {};
}

void RealSenseCamera::setPaused(bool paused) {
  if (options_.bag.empty() || !device_ || paused_ == paused) return;
  rs2_error* e = nullptr;
  // Both wait for the SDK's reader (pause also for the frame callbacks in progress): never called from them.
  if (paused) api_->rs2_playback_device_pause(device_.get(), &e);
  else api_->rs2_playback_device_resume(device_.get(), &e);
  if (e) api_->rs2_free_error(e);
  else paused_ = paused;
}

void RealSenseCamera::releaseQueued() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const FrameSet& set : framesets_) releaseSet(set);
  framesets_.clear();
  for (auto& pending : pending_) {
    for (const Pending& p : pending) api_->rs2_release_frame(p.frame);
    pending.clear();
  }
}

void RealSenseCamera::close() {
  if (!api_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  // A recording is paused first (its callbacks released above): its reader stops the sensors itself at the
  // end of the file, and a stop from here at that moment crashes inside the SDK; paused, it reads no more.
  if (!started_.empty()) setPaused(true);
  rs2_error* e = nullptr;
  for (auto it = started_.rbegin(); it != started_.rend(); ++it) {
    int si = *it >= 0 ? *it : -1 - *it;
    if (*it >= 0) api_->rs2_stop(sensors_[si].get(), &e);
    if (e) api_->rs2_free_error(e), e = nullptr;
    api_->rs2_close(sensors_[si].get(), &e);
    if (e) api_->rs2_free_error(e), e = nullptr;
  }
  started_.clear();
  paused_ = false;
  releaseQueued();
  aligned_.reset();
  align_.reset();
  composed_.reset();
  composer_.reset();
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
  for (;;) {
    if (!device_) return Result::fail(Status::CameraNotConnected, "RealSense camera not open");
    const auto start = std::chrono::steady_clock::now();
    FrameSet set{};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (!framesets_.empty()) {
          set = framesets_.front();
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
    // The set becomes one composite frame (our composer block), the form the SDK's align block takes.
    rs2_error* e = nullptr;
    composing_ = set;
    rs2_frame* trigger = set[kColour];
    api_->rs2_frame_add_ref(trigger, &e);
    if (!e) api_->rs2_process_frame(composer_.get(), trigger, &e);
    composing_ = FrameSet{};
    releaseSet(set);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api_, e));
    rs2_frame* composite = nullptr;
    if (!api_->rs2_poll_for_frame(composed_.get(), &composite, &e) || !composite) {
      if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api_, e));
      return Result::fail(Status::CameraNotConnected, "could not bundle a frame set");
    }
    bool skipped = false;
    Result r = takeFrameset(composite, frame, &skipped);
    if (!r.ok() || !skipped) return r;
  }
}

Result RealSenseCamera::takeFrameset(rs2_frame* frameset, CameraFrame* frame, bool* skipped) {
  const RealSenseApi& api = *api_;
  auto original = hold(frameset);
  rs2_error* e = nullptr;
  *skipped = false;
  // The align block takes a reference of its own; the original set is still needed for the infrared image.
  api.rs2_frame_add_ref(frameset, &e);
  if (!e) api.rs2_process_frame(align_.get(), frameset, &e);
  if (e) return Result::fail(Status::CameraNotConnected, "aligning depth to colour failed: " + takeRealSenseError(api, e));
  rs2_frame* alignedRaw = nullptr;
  int got = api.rs2_poll_for_frame(aligned_.get(), &alignedRaw, &e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
  if (!got || !alignedRaw) return Result::fail(Status::CameraNotConnected, "the SDK's align block gave no frame");
  auto aligned = hold(alignedRaw);

  auto pick = [&](rs2_frame* set, Slot slot) -> RealSenseHandle<rs2_frame> {
    int n = api.rs2_embedded_frames_count(set, &e);
    for (int i = 0; !e && i < n; ++i) {
      auto f = hold(api.rs2_extract_frame(set, i, &e));
      if (!e && streamSlot(f.get()) == slot) return f;
    }
    return hold(nullptr);
  };
  auto depth = pick(alignedRaw, kDepth);
  auto colour = pick(alignedRaw, kColour);
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
  const int64_t raw = static_cast<int64_t>(std::llround(tsMs * 1000.0));
  if (!options_.bag.empty() && lastRawTs_ >= 0 && raw <= lastRawTs_) {
    *skipped = true;
    return {};
  }
  lastRawTs_ = raw;

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
    auto rawDepth = pick(frameset, kDepth);
    auto ir = pick(frameset, kInfrared);
    if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(api, e));
    if (rawDepth && ir) mapInfrared(rawDepth.get(), ir.get(), frame);
  }
  frame->intrinsics.fx = colourIntrinsics_.fx;
  frame->intrinsics.fy = colourIntrinsics_.fy;
  frame->intrinsics.cx = colourIntrinsics_.ppx;
  frame->intrinsics.cy = colourIntrinsics_.ppy;
  // The camera's clock, kept increasing across a replayed recording's restarts.
  int64_t ts = raw + tsOffset_;
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
  // the colour image through the camera's calibration like the SDK's align block carries depth, the pixel's
  // two corners projected and the colour pixels between them filled, nearest surface kept. Infrared level
  // 0 means "none there", so a measured 0 is kept as 1.
  auto project = [&](float u, float v, float metres, float out[2], float* z) {
    const float pixel[2] = {u, v};
    float p[3], q[3];
    rs2_deproject_pixel_to_point(p, &depthIntrinsics_, pixel, metres);
    rs2_transform_point_to_point(q, &depthToColour_, p);
    rs2_project_point_to_pixel(out, &colourIntrinsics_, q);
    *z = q[2];
  };
  for (int v = 0; v < dh; ++v) {
    const auto* zrow = reinterpret_cast<const uint16_t*>(z + static_cast<size_t>(v) * dstride);
    const uint8_t* irow = ir + static_cast<size_t>(v) * istride;
    for (int u = 0; u < dw; ++u) {
      if (!zrow[u]) continue;
      const float metres = zrow[u] * depthUnits_;
      float a[2], b[2], za, zb;
      project(u - 0.5f, v - 0.5f, metres, a, &za);
      project(u + 0.5f, v + 0.5f, metres, b, &zb);
      const int x0 = std::max(0, static_cast<int>(std::lround(std::min(a[0], b[0])))), x1 = std::min(w - 1, static_cast<int>(std::lround(std::max(a[0], b[0]))));
      const int y0 = std::max(0, static_cast<int>(std::lround(std::min(a[1], b[1])))), y1 = std::min(h - 1, static_cast<int>(std::lround(std::max(a[1], b[1]))));
      const uint8_t level = std::max<uint8_t>(1, irow[u]);
      for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) {
          const size_t i = static_cast<size_t>(y) * w + x;
          if (nearest[i] == 0 || za < nearest[i]) {
            nearest[i] = za;
            frame->ir[i] = level;
          }
        }
    }
  }
}

}  // namespace facecheck
