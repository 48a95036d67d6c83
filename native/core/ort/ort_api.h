// Loads ONNX Runtime at run time with dlopen, so the addon links against nothing but libc and finds
// libonnxruntime.so.1 wherever the onnxruntime-node package was installed (hoisted or nested).
#pragma once

#include <onnxruntime_c_api.h>

#include <string>

#include "core/status.h"

namespace facecheck {

// Loads the library once per process (later calls with another path reuse the first library).
// Returns the API table or nullptr with *error set.
const OrtApi* loadOrtApi(const std::string& libraryPath, std::string* error);

// The API table after a successful loadOrtApi, else nullptr.
const OrtApi* ortApi();

// Converts an OrtStatus into a Result (and releases it). nullptr status means success.
Result ortCheck(OrtStatus* status, const char* what);

}  // namespace facecheck
