// The one error table of the service (interface spec section 7, plus the generic 401/403/500 and the
// engine's own failures). The native status codes are this enum; the addon exports the whole table to
// TypeScript, which builds every HTTP error body from it. Order: X(enum, code, http, message).
#pragma once

#include <string>

#define FACE_CHECK_ERRORS(X)                                                             \
  X(Ok, "OK", 200, "OK")                                                                 \
  X(CameraNotConnected, "R_400", 400, "Camera is not connected")                         \
  X(LiveFaceNotFound, "R_404", 400, "Face not found, or did not pass the liveness check") \
  X(FaceExists, "F_012", 400, "Face exists")                                             \
  X(WrongFaceSize, "F_011", 400, "Wrong face size when image check")                     \
  X(WrongFaceYaw, "F_010", 400, "Wrong face yaw")                                        \
  X(WrongFacePitch, "F_009", 400, "Wrong face pitch")                                    \
  X(WrongFaceRoll, "F_008", 400, "Wrong face roll")                                      \
  X(BadSharpness, "F_007", 400, "Sharpness is bad")                                      \
  X(BadBrightness, "F_006", 400, "Brightness is bad")                                    \
  X(SunglassesExist, "F_005", 400, "Sunglasses exist")                                   \
  X(MouthOpen, "F_004", 400, "Mouth is open")                                            \
  X(EyesClosed, "F_003", 400, "Eyes are closed")                                         \
  X(NoFace, "F_002", 400, "Most likely no face exists")                                  \
  X(NotOneFace, "F_001", 400, "Should be one face")                                      \
  X(ProfileExists, "CP_002", 400, "Customer profile already exists with id <person_id>") \
  X(RequestBody, "R_002", 400, "Request body exception")                                 \
  X(FieldsValidation, "R_003", 400, "Fields validation exception")                       \
  X(QuotaExceeded, "CP_005", 400, "Number of available requests exceeded")               \
  X(FaceNotInCollection, "NF_001", 404, "Face not found in collection")                  \
  X(NoPersonMatched, "RF_001", 410, "No person matched")                                 \
  X(Unauthorized, "UNAUTHORIZED", 401, "Unauthorized")                                   \
  X(Forbidden, "FORBIDDEN", 403, "Forbidden")                                            \
  X(Internal, "INTERNAL", 500, "Internal Server Error")                                  \
  X(NotFoundRoute, "NOT_FOUND", 404, "Route not found")                                  \
  X(MethodNotAllowed, "METHOD_NOT_ALLOWED", 405, "Method not allowed")                   \
  X(PayloadTooLarge, "R_002", 413, "Request body exception")                             \
  X(ServiceUnavailable, "SERVICE_UNAVAILABLE", 503, "Service unavailable")               \
  X(EmailTaken, "AC_001", 400, "An account already exists with this e-mail address")    \
  X(BadCredentials, "AC_002", 401, "Wrong e-mail address or password")                   \
  X(SignInThrottled, "AC_003", 429, "Too many failed sign-in attempts")                  \
  X(ActivationCodeRequired, "LC_001", 400, "An activation code is required")             \
  X(ActivationCodeInvalid, "LC_002", 400, "Activation code refused")                     \
  X(LicenceLimitReached, "LC_003", 400, "The plan's licence limit is reached")           \
  X(LicenceNotFound, "LC_004", 404, "Licence not found")                                 \
  X(LicenceKeyUnknown, "LC_005", 401, "Unknown licence key")                             \
  X(LicenceRevoked, "LC_006", 403, "Licence revoked")                                    \
  X(LicenceExpired, "LC_007", 403, "Licence expired")                                    \
  X(LicenceBoundElsewhere, "LC_008", 403, "Licence bound to another device")

namespace facecheck {

enum class Status : int {
#define FACE_CHECK_ENUM(name, code, http, message) name,
  FACE_CHECK_ERRORS(FACE_CHECK_ENUM)
#undef FACE_CHECK_ENUM
};

struct ErrorInfo {
  const char* name;
  const char* code;
  int http;
  const char* message;
};

inline const ErrorInfo* errorTable(int* count) {
  static const ErrorInfo table[] = {
#define FACE_CHECK_ROW(name, code, http, message) {#name, code, http, message},
      FACE_CHECK_ERRORS(FACE_CHECK_ROW)
#undef FACE_CHECK_ROW
  };
  *count = static_cast<int>(sizeof(table) / sizeof(table[0]));
  return table;
}

inline const ErrorInfo& errorInfo(Status s) {
  int n = 0;
  return errorTable(&n)[static_cast<int>(s)];
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
