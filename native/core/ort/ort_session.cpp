#include "core/ort/ort_session.h"

#include <map>
#include <mutex>
#include <string>

#include "core/ort/float_mode.h"
#include "core/ort/ort_api.h"

namespace facecheck {

#define FACE_CHECK_ORT_RELEASE(Type, Release) \
  void OrtDeleter<Type>::operator()(Type* p) const { if (p) ortApi()->Release(p); }
FACE_CHECK_ORT_RELEASE(OrtEnv, ReleaseEnv)
FACE_CHECK_ORT_RELEASE(OrtSession, ReleaseSession)
FACE_CHECK_ORT_RELEASE(OrtSessionOptions, ReleaseSessionOptions)
FACE_CHECK_ORT_RELEASE(OrtMemoryInfo, ReleaseMemoryInfo)
FACE_CHECK_ORT_RELEASE(OrtValue, ReleaseValue)
#undef FACE_CHECK_ORT_RELEASE

size_t TensorSpec::elements() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

Result sharedOrtEnv(OrtEnv** env) {
  // Never released: the environment must outlive every session, including ones freed at exit.
  static std::mutex mutex;
  static OrtEnv* shared = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!shared) {
    Result r = ortCheck(ortApi()->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "face-check", &shared), "CreateEnv");
    if (!r.ok()) return r;
  }
  *env = shared;
  return {};
}

namespace {

Result checkShapes(const OrtApi* api, OrtSession* session, bool isInput, size_t index, const TensorSpec& want,
                   const std::string& path) {
  OrtTypeInfo* typeInfo = nullptr;
  Result r = ortCheck(isInput ? api->SessionGetInputTypeInfo(session, index, &typeInfo)
                              : api->SessionGetOutputTypeInfo(session, index, &typeInfo),
                      "GetTypeInfo");
  if (!r.ok()) return r;
  const OrtTensorTypeAndShapeInfo* info = nullptr;
  size_t dims = 0;
  std::vector<int64_t> shape;
  r = ortCheck(api->CastTypeInfoToTensorInfo(typeInfo, &info), "CastTypeInfoToTensorInfo");
  if (r.ok()) r = ortCheck(api->GetDimensionsCount(info, &dims), "GetDimensionsCount");
  if (r.ok()) {
    shape.resize(dims);
    r = ortCheck(api->GetDimensions(info, shape.data(), dims), "GetDimensions");
  }
  api->ReleaseTypeInfo(typeInfo);
  if (!r.ok()) return r;
  bool same = shape.size() == want.shape.size();
  for (size_t i = 0; same && i < shape.size(); ++i) same = shape[i] == want.shape[i] || shape[i] < 0;
  if (!same) return Result::fail(Status::Internal, path + ": tensor " + want.name + " has an unexpected shape");
  return {};
}

Result makeSessionOptions(const SessionConfig& config, OrtPtr<OrtSessionOptions>* out) {
  const OrtApi* api = ortApi();
  OrtSessionOptions* rawOptions = nullptr;
  Result r = ortCheck(api->CreateSessionOptions(&rawOptions), "CreateSessionOptions");
  if (!r.ok()) return r;
  OrtPtr<OrtSessionOptions> options(rawOptions);
  // Sequential execution, a fixed number of intra-op threads and no spin-waiting: the service runs several
  // analyses at once on few cores, where spinning threads only steal time from each other.
  if (!(r = ortCheck(api->SetIntraOpNumThreads(options.get(), config.intraOpThreads), "SetIntraOpNumThreads")).ok())
    return r;
  if (!(r = ortCheck(api->SetInterOpNumThreads(options.get(), 1), "SetInterOpNumThreads")).ok()) return r;
  if (!(r = ortCheck(api->SetSessionExecutionMode(options.get(), ORT_SEQUENTIAL), "SetSessionExecutionMode")).ok())
    return r;
  if (!(r = ortCheck(api->SetSessionGraphOptimizationLevel(options.get(), config.optimization),
                     "SetSessionGraphOptimizationLevel")).ok())
    return r;
  if (!(r = ortCheck(api->AddSessionConfigEntry(options.get(), "session.intra_op.allow_spinning", "0"),
                     "AddSessionConfigEntry")).ok())
    return r;
  // Denormals as zero on ORT's own pool threads too (run() sets it on the calling thread; see float_mode.h).
  if (!(r = ortCheck(api->AddSessionConfigEntry(options.get(), "session.set_denormal_as_zero", "1"),
                     "AddSessionConfigEntry")).ok())
    return r;
  if (!config.disabledOptimizers.empty()) {
    r = ortCheck(api->AddSessionConfigEntry(options.get(), "optimization.disable_specified_optimizers",
                                            config.disabledOptimizers.c_str()),
                 "AddSessionConfigEntry");
    if (!r.ok()) return r;
  }
  // Without a memory pattern the arena serves each activation as it comes and reuses what the previous
  // layers freed; with one it plans a block for the whole run. Off where it returns memory for nothing
  // (SessionConfig::memoryPattern).
  if (!config.memoryPattern && !(r = ortCheck(api->DisableMemPattern(options.get()), "DisableMemPattern")).ok())
    return r;
  *out = std::move(options);
  return {};
}

// One session per model file and config for the whole process, while some engine holds it: the API engine
// and the camera's engine load the same detector, landmark and eye models (ONNX Runtime sessions are
// thread-safe for Run). A slot's mutex makes an engine loading a model another is loading wait for it
// instead of loading it twice.
struct SessionSlot {
  std::mutex loading;
  std::weak_ptr<OrtSession> session;
};

std::shared_ptr<SessionSlot> slotFor(const std::string& path, const SessionConfig& config) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<SessionSlot>> slots;
  std::string key = path + '\n' + std::to_string(config.intraOpThreads) + '\n' +
                    std::to_string(static_cast<int>(config.optimization)) + '\n' + config.disabledOptimizers +
                    '\n' + (config.memoryPattern ? "pattern" : "no-pattern");
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<SessionSlot>& slot = slots[key];
  if (!slot) slot = std::make_shared<SessionSlot>();
  return slot;
}

Result createSession(const std::string& path, const SessionConfig& config, std::shared_ptr<OrtSession>* out) {
  const OrtApi* api = ortApi();
  OrtEnv* env = nullptr;
  Result r = sharedOrtEnv(&env);
  if (!r.ok()) return r;
  OrtPtr<OrtSessionOptions> options;
  if (!(r = makeSessionOptions(config, &options)).ok()) return r;
  OrtSession* rawSession = nullptr;
  if (!(r = ortCheck(api->CreateSession(env, path.c_str(), options.get(), &rawSession), "CreateSession")).ok())
    return Result::fail(Status::Internal, path + ": " + r.detail);
  *out = std::shared_ptr<OrtSession>(rawSession, OrtDeleter<OrtSession>());
  return {};
}

Result sharedSession(const std::string& path, const SessionConfig& config, std::shared_ptr<OrtSession>* out) {
  std::shared_ptr<SessionSlot> slot = slotFor(path, config);
  std::lock_guard<std::mutex> loading(slot->loading);
  if ((*out = slot->session.lock())) return {};
  Result r = createSession(path, config, out);
  if (r.ok()) slot->session = *out;
  return r;
}

}  // namespace

Result OrtModel::load(const std::string& path, const SessionConfig& config, const TensorSpec& input,
                      const std::vector<TensorSpec>& outputs, std::unique_ptr<OrtModel>* out) {
  const OrtApi* api = ortApi();
  if (!api) return Result::fail(Status::Internal, "ONNX Runtime is not loaded");
  auto model = std::unique_ptr<OrtModel>(new OrtModel());
  Result r = sharedSession(path, config, &model->session_);
  if (!r.ok()) return r;
  OrtSession* session = model->session_.get();

  size_t inputCount = 0, outputCount = 0;
  if (!(r = ortCheck(api->SessionGetInputCount(session, &inputCount), "SessionGetInputCount")).ok()) return r;
  if (!(r = ortCheck(api->SessionGetOutputCount(session, &outputCount), "SessionGetOutputCount")).ok()) return r;
  if (inputCount != 1 || outputCount != outputs.size())
    return Result::fail(Status::Internal, path + ": unexpected number of inputs or outputs");
  if (!(r = checkShapes(api, session, true, 0, input, path)).ok()) return r;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!(r = checkShapes(api, session, false, i, outputs[i], path)).ok()) return r;

  OrtMemoryInfo* memory = nullptr;
  if (!(r = ortCheck(api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeCPU, &memory), "CreateCpuMemoryInfo")).ok())
    return r;
  model->memory_.reset(memory);
  model->input_ = input;
  model->outputs_ = outputs;
  for (const TensorSpec& o : model->outputs_) model->outputNames_.push_back(o.name.c_str());
  *out = std::move(model);
  return {};
}

Result OrtModel::run(float* input, float* const* outputs) const {
  const OrtApi* api = ortApi();
  auto wrap = [&](float* data, const TensorSpec& spec, OrtValue** value) {
    return ortCheck(api->CreateTensorWithDataAsOrtValue(memory_.get(), data, spec.elements() * sizeof(float),
                                                        spec.shape.data(), spec.shape.size(),
                                                        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, value),
                    "CreateTensor");
  };
  OrtValue* rawInput = nullptr;
  Result r = wrap(input, input_, &rawInput);
  if (!r.ok()) return r;
  OrtPtr<OrtValue> inputValue(rawInput);

  std::vector<OrtValue*> rawOutputs(outputs_.size(), nullptr);
  std::vector<OrtPtr<OrtValue>> outputValues;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!(r = wrap(outputs[i], outputs_[i], &rawOutputs[i])).ok()) return r;
    outputValues.emplace_back(rawOutputs[i]);
  }
  const char* inputName = input_.name.c_str();
  const OrtValue* inputs[] = {inputValue.get()};
  FlushDenormals flush;  // a single-threaded session computes on this thread
  return ortCheck(api->Run(session_.get(), nullptr, &inputName, inputs, 1, outputNames_.data(), outputs_.size(),
                           rawOutputs.data()),
                  "Run");
}

}  // namespace facecheck
