// The statuses native code returns: the engine's, the camera's and the index's failures. Each is named
// after its row in the service's error table (src/error-table.ts), which holds the code, HTTP status and
// public message; the addon exports the names (`nativeStatuses`) and a test holds that each has a row.
#pragma once

#include <string>

#define FACE_CHECK_STATUSES(X) \
  X(Ok)                        \
  X(CameraNotConnected)        \
  X(FaceExists)                \
  X(FaceNotInCollection)       \
  X(FieldsValidation)          \
  X(Internal)                  \
  X(ServiceUnavailable)

namespace facecheck {

enum class Status : int {
#define FACE_CHECK_ENUM(name) name,
  FACE_CHECK_STATUSES(FACE_CHECK_ENUM)
#undef FACE_CHECK_ENUM
};

// Every status's name, indexed by its value.
inline const char* const* statusNames(int* count) {
  static const char* const names[] = {
#define FACE_CHECK_NAME(name) #name,
      FACE_CHECK_STATUSES(FACE_CHECK_NAME)
#undef FACE_CHECK_NAME
  };
  *count = static_cast<int>(sizeof(names) / sizeof(names[0]));
  return names;
}

inline const char* statusName(Status s) {
  int n = 0;
  return statusNames(&n)[static_cast<int>(s)];
}

// A status plus a detail for logs and error messages; what crosses every native boundary instead of
// an exception.
struct Result {
  Status status = Status::Ok;
  std::string detail;
  bool ok() const { return status == Status::Ok; }
  static Result fail(Status s, std::string d) { return Result{s, std::move(d)}; }
};

}  // namespace facecheck
