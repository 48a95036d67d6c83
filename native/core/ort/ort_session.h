// RAII over the ONNX Runtime handles the engine uses, and one model session with fixed-shape float
// tensors. Run() binds caller-owned buffers for input and outputs, so inference allocates nothing.
#pragma once

#include <onnxruntime_c_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace facecheck {

template <typename T>
struct OrtDeleter;
#define FACE_CHECK_ORT_DELETER(Type)                                 \
  template <>                                                        \
  struct OrtDeleter<Type> {                                          \
    void operator()(Type* p) const;                                  \
  };
FACE_CHECK_ORT_DELETER(OrtEnv)
FACE_CHECK_ORT_DELETER(OrtSession)
FACE_CHECK_ORT_DELETER(OrtSessionOptions)
FACE_CHECK_ORT_DELETER(OrtMemoryInfo)
FACE_CHECK_ORT_DELETER(OrtValue)
#undef FACE_CHECK_ORT_DELETER

template <typename T>
using OrtPtr = std::unique_ptr<T, OrtDeleter<T>>;

// How a session is built; chosen per model by measurement (see bench/engine.ts).
struct SessionConfig {
  int intraOpThreads = 1;
  GraphOptimizationLevel optimization = ORT_ENABLE_ALL;
  std::string disabledOptimizers;  // e.g. "NchwcTransformer"
  // ONNX Runtime's memory pattern (one planned block per run); off keeps the detector's resident memory
  // lower at the same speed (docs/board.md).
  bool memoryPattern = true;
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  size_t elements() const;
};

// The process-wide ORT environment, shared by every engine and created on first use.
Result sharedOrtEnv(OrtEnv** env);

class OrtModel {
 public:
  // Loads `path` and checks that the model's inputs and outputs match `input` and `outputs`. A model file
  // already loaded with the same config (by another engine of the process) shares that session: weights
  // and working memory once, not per engine.

  static Result load(const std::string& path, const SessionConfig& config, const TensorSpec& input,
                     const std::vector<TensorSpec>& outputs, std::unique_ptr<OrtModel>* out);

  // Runs the model: `input` holds input.elements() floats; outputs[i] receives outputs[i].elements().
  // Thread-safe: ORT sessions allow concurrent Run calls.
  Result run(float* input, float* const* outputs) const;

  const TensorSpec& input() const { return input_; }
  const TensorSpec& output(size_t i) const { return outputs_[i]; }

 private:
  std::shared_ptr<OrtSession> session_;
  OrtPtr<OrtMemoryInfo> memory_;
  TensorSpec input_;
  std::vector<TensorSpec> outputs_;
  std::vector<const char*> outputNames_;
};

}  // namespace facecheck
