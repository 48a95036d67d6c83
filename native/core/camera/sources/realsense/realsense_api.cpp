#include "core/camera/sources/realsense/realsense_api.h"

#include <dirent.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace facecheck {

RealSenseApi::~RealSenseApi() {
  if (handle) dlclose(handle);
}

std::string takeRealSenseError(const RealSenseApi& api, rs2_error* error) {
  if (!error) return "";
  const char* fn = api.rs2_get_failed_function(error);
  const char* msg = api.rs2_get_error_message(error);
  std::string s = std::string(fn && *fn ? fn : "librealsense2") + ": " + (msg ? msg : "unknown error");
  api.rs2_free_error(error);
  return s;
}

namespace {

// The system's library folders, as the dynamic loader searches them, for the "auto" choice.
std::vector<std::string> libraryFolders() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
#if defined(__aarch64__)
  dirs.push_back("/usr/lib/aarch64-linux-gnu");
#elif defined(__x86_64__)
  dirs.push_back("/usr/lib/x86_64-linux-gnu");
#elif defined(__arm__)
  dirs.push_back("/usr/lib/arm-linux-gnueabihf");
#endif
  dirs.push_back("/usr/local/lib");
  dirs.push_back("/usr/lib");
  return dirs;
}

// The newest librealsense2.so.2.<minor>[.<patch>] in the library folders, or "".
std::string newestVersionedLibrary() {
  std::string best;
  long bestMinor = -1, bestPatch = -1;
  for (const std::string& dir : libraryFolders()) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      const char* prefix = "librealsense2.so.2.";
      if (std::strncmp(e->d_name, prefix, std::strlen(prefix)) != 0) continue;
      char* end = nullptr;
      long minor = std::strtol(e->d_name + std::strlen(prefix), &end, 10);
      long patch = (end && *end == '.') ? std::strtol(end + 1, nullptr, 10) : 0;
      if (minor > bestMinor || (minor == bestMinor && patch > bestPatch)) {
        bestMinor = minor;
        bestPatch = patch;
        best = dir + "/" + e->d_name;
      }
    }
    closedir(d);
  }
  return best;
}

std::vector<std::string> candidates(const std::string& library) {
  if (library != "auto") return {library};
  std::vector<std::string> list = {"librealsense2.so"};
  std::string versioned = newestVersionedLibrary();
  if (!versioned.empty()) list.push_back(versioned);
  list.push_back("librealsense2.so.2");
  return list;
}

}  // namespace

Result loadRealSense(const std::string& library, std::shared_ptr<RealSenseApi>* out) {
  std::string tried;
  void* h = nullptr;
  std::string loaded;
  for (const std::string& name : candidates(library)) {
    h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h) {
      loaded = name;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (!h) return Result::fail(Status::CameraNotConnected, "librealsense2 not available: " + tried);
  auto api = std::make_shared<RealSenseApi>();
  api->handle = h;
  api->path = loaded;
  std::string missing;
#define FACE_CHECK_RS2_RESOLVE(name)                                   \
  {                                                                    \
    void* p = dlsym(h, #name);                                         \
    if (!p && missing.empty()) missing = #name;                        \
    std::memcpy(&api->name, &p, sizeof p);                             \
  }
  FACE_CHECK_RS2_FUNCTIONS(FACE_CHECK_RS2_RESOLVE)
#undef FACE_CHECK_RS2_RESOLVE
  if (!missing.empty()) return Result::fail(Status::CameraNotConnected, loaded + " lacks librealsense2's " + missing);
  rs2_error* e = nullptr;
  api->version = api->rs2_get_api_version(&e);
  if (e) return Result::fail(Status::CameraNotConnected, takeRealSenseError(*api, e));
  *out = std::move(api);
  return {};
}

bool realSenseLoadable(const std::string& library, std::string* detail) {
  std::shared_ptr<RealSenseApi> api;
  Result r = loadRealSense(library, &api);
  if (!r.ok()) {
    *detail = r.detail;
    return false;
  }
  int v = api->version;
  *detail = api->path + " (librealsense " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
            std::to_string(v % 100) + ")";
  return true;
}

}  // namespace facecheck
