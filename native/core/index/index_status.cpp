// Stable names of the index failures for the JS side, and the service status each one maps to.
#include "core/index/similarity_index.h"

namespace facecheck::index {

const char* indexCodeName(IndexCode code) {
  switch (code) {
    case IndexCode::Ok: return "OK";
    case IndexCode::BadArgument: return "ERR_INDEX_BAD_ARGUMENT";
    case IndexCode::NoCollection: return "ERR_INDEX_NO_COLLECTION";
    case IndexCode::DimMismatch: return "ERR_INDEX_DIM_MISMATCH";
    case IndexCode::KeyExists: return "ERR_INDEX_KEY_EXISTS";
    case IndexCode::KeyNotFound: return "ERR_INDEX_KEY_NOT_FOUND";
    case IndexCode::OutOfMemory: return "ERR_INDEX_OUT_OF_MEMORY";
    case IndexCode::Internal: return "ERR_INDEX_INTERNAL";
  }
  return "ERR_INDEX_INTERNAL";
}

Status toStatus(IndexCode code) {
  switch (code) {
    case IndexCode::Ok: return Status::Ok;
    case IndexCode::BadArgument:
    case IndexCode::DimMismatch: return Status::FieldsValidation;
    case IndexCode::NoCollection:
    case IndexCode::KeyNotFound: return Status::FaceNotInCollection;
    case IndexCode::KeyExists: return Status::FaceExists;
    case IndexCode::OutOfMemory:
    case IndexCode::Internal: return Status::Internal;
  }
  return Status::Internal;
}

}  // namespace facecheck::index
