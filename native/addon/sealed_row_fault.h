// The names JavaScript sees for why a sealed row did not open (src/storage/crypto/sealed-batch.ts).
#pragma once

#include "core/sealed/sealed_batch.h"

namespace facecheck::addon {

inline const char* sealedRowFaultName(crypto::SealedRowFault f) {
  switch (f) {
    case crypto::SealedRowFault::TooShort: return "short";
    case crypto::SealedRowFault::Version: return "version";
    case crypto::SealedRowFault::Tag: return "tag";
    case crypto::SealedRowFault::Size: return "size";
    case crypto::SealedRowFault::Unavailable: return "unavailable";
    case crypto::SealedRowFault::None: break;
  }
  return "";
}

}  // namespace facecheck::addon
