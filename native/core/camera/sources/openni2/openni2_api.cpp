#include "core/camera/sources/openni2/openni2_api.h"

#include <dlfcn.h>

#include <cctype>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <OniVersion.h>

namespace facecheck {

OpenNI2Api::~OpenNI2Api() {
  if (handle) dlclose(handle);
}

std::string OpenNI2Api::error(const char* fallback) const {
  const char* e = extendedError ? extendedError() : nullptr;
  std::string s = e ? e : "";
  // OpenNI2 indents and ends its messages with white space.
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s.erase(0, start);
  return s.empty() ? fallback : std::string(fallback) + ": " + s;
}

Result loadOpenNI2(const std::string& library, std::unique_ptr<OpenNI2Api>* out) {
  // Never unloaded: OpenNI2 keeps driver threads and static state whose teardown at dlclose is not safe.
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) return Result::fail(Status::CameraNotConnected, std::string("OpenNI2 not available: ") + dlerror());
  auto api = std::make_unique<OpenNI2Api>();
  api->handle = h;
  std::string missing;
  auto sym = [&](const char* name, auto* fn) {
    void* p = dlsym(h, name);
    if (!p && missing.empty()) missing = name;
    std::memcpy(fn, &p, sizeof p);
  };
  sym("oniInitialize", &api->initialize);
  sym("oniShutdown", &api->shutdown);
  sym("oniGetExtendedError", &api->extendedError);
  sym("oniGetDeviceList", &api->getDeviceList);
  sym("oniReleaseDeviceList", &api->releaseDeviceList);
  sym("oniRegisterDeviceCallbacks", &api->registerDeviceCallbacks);
  sym("oniUnregisterDeviceCallbacks", &api->unregisterDeviceCallbacks);
  sym("oniWaitForAnyStream", &api->waitForAnyStream);
  sym("oniDeviceOpen", &api->deviceOpen);
  sym("oniDeviceClose", &api->deviceClose);
  sym("oniDeviceGetInfo", &api->deviceGetInfo);
  sym("oniDeviceGetSensorInfo", &api->deviceGetSensorInfo);
  sym("oniDeviceCreateStream", &api->deviceCreateStream);
  sym("oniDeviceEnableDepthColorSync", &api->deviceEnableDepthColorSync);
  sym("oniDeviceDisableDepthColorSync", &api->deviceDisableDepthColorSync);
  sym("oniDeviceSetProperty", &api->deviceSetProperty);
  sym("oniDeviceGetProperty", &api->deviceGetProperty);
  sym("oniDeviceIsPropertySupported", &api->deviceIsPropertySupported);
  sym("oniDeviceIsImageRegistrationModeSupported", &api->deviceIsImageRegistrationModeSupported);
  sym("oniStreamDestroy", &api->streamDestroy);
  sym("oniStreamStart", &api->streamStart);
  sym("oniStreamStop", &api->streamStop);
  sym("oniStreamReadFrame", &api->streamReadFrame);
  sym("oniStreamSetProperty", &api->streamSetProperty);
  sym("oniStreamGetProperty", &api->streamGetProperty);
  sym("oniFrameRelease", &api->frameRelease);
  sym("oniCoordinateConverterDepthToColor", &api->depthToColor);
  sym("oniCreateRecorder", &api->createRecorder);
  sym("oniRecorderAttachStream", &api->recorderAttachStream);
  sym("oniRecorderStart", &api->recorderStart);
  sym("oniRecorderStop", &api->recorderStop);
  sym("oniRecorderDestroy", &api->recorderDestroy);
  if (!missing.empty())
    return Result::fail(Status::CameraNotConnected, library + " lacks OpenNI2's " + missing + " (not OpenNI 2.2?)");
  *out = std::move(api);
  return {};
}

namespace {

class OpenNI2Thread {
 public:
  OpenNI2Thread() : thread_([this] { loop(); }) { id_ = thread_.get_id(); thread_.detach(); }
  void run(const std::function<void()>& task) {
    if (std::this_thread::get_id() == id_) {
      task();
      return;
    }
    std::packaged_task<void()> job(task);
    std::future<void> done = job.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    done.wait();
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  std::thread thread_;
  std::thread::id id_;
};

}  // namespace

void onOpenNI2Thread(const std::function<void()>& task) {
  // Never destroyed: the thread outlives every static destructor (it may be blocked in its queue then).
  static OpenNI2Thread* thread = new OpenNI2Thread();
  thread->run(task);
}

Result initialiseOpenNI2Once(const OpenNI2Api& api) {
  static std::mutex mutex;
  static std::map<void*, Result> done;  // per loaded library (dlopen handle)
  std::lock_guard<std::mutex> lock(mutex);
  auto it = done.find(api.handle);
  if (it != done.end()) return it->second;
  Result r;
  if (api.initialize(ONI_API_VERSION) != ONI_STATUS_OK)
    r = Result::fail(Status::CameraNotConnected,
                     api.error("OpenNI2 failed to initialise (no driver in its OpenNI2/Drivers folder? restart after installing one)"));
  done.emplace(api.handle, r);
  return r;
}

bool openNI2Loadable(const std::string& library, std::string* detail) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *detail = dlerror();
    return false;
  }
  const bool ok = dlsym(h, "oniInitialize") != nullptr && dlsym(h, "oniCreateRecorder") != nullptr;
  *detail = ok ? library + " loads" : library + " lacks OpenNI2's C API";
  dlclose(h);
  return ok;
}

}  // namespace facecheck
