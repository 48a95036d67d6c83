#include "core/ort/ort_api.h"

#include <dlfcn.h>

#include <mutex>

namespace facecheck {

namespace {
std::mutex gLoadMutex;
const OrtApi* gApi = nullptr;
void* gLibrary = nullptr;  // kept for the life of the process: sessions may outlive any engine object
}  // namespace

const OrtApi* loadOrtApi(const std::string& libraryPath, std::string* error) {
  std::lock_guard<std::mutex> lock(gLoadMutex);
  if (gApi) return gApi;
  gLibrary = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!gLibrary) {
    *error = std::string("cannot load ONNX Runtime from ") + libraryPath + ": " + dlerror();
    return nullptr;
  }
  using GetApiBase = const OrtApiBase* (*)();
  auto getApiBase = reinterpret_cast<GetApiBase>(dlsym(gLibrary, "OrtGetApiBase"));
  if (!getApiBase) {
    *error = "OrtGetApiBase not found in " + libraryPath;
    return nullptr;
  }
  const OrtApiBase* base = getApiBase();
  gApi = base->GetApi(ORT_API_VERSION);
  if (!gApi) {
    *error = std::string("ONNX Runtime ") + base->GetVersionString() + " does not offer C API version " +
             std::to_string(ORT_API_VERSION);
  }
  return gApi;
}

const OrtApi* ortApi() { return gApi; }

Result ortCheck(OrtStatus* status, const char* what) {
  if (!status) return {};
  std::string message = std::string(what) + ": " + gApi->GetErrorMessage(status);
  gApi->ReleaseStatus(status);
  return Result::fail(Status::Internal, message);
}

}  // namespace facecheck
