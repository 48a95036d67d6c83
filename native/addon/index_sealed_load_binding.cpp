// index.loadSealedTemplates: sealed templates opened straight into a collection's rows
// (Collection::loadSealedTemplates), for a PostgreSQL node's start-up build. The TypeScript caller
// (src/similarity-index/similarity-index.ts) checks the arguments first; this file guards the addon against a wrong
// call, copies the key (wiped when the call ends) and reports the first row that did not open the way
// openSealedTemplates (sealed_batch_binding.cpp) does.
#include <string.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "addon/index_js.h"
#include "addon/sealed_row_fault.h"
#include "core/sealed/sealed_batch.h"

namespace facecheck::addon::indexjs {
namespace {

using crypto::SealedBatch;
using crypto::SealedBatchResult;

// The key for the duration of one call, wiped however the call ends.
struct CallKey {
  std::array<uint8_t, 32> bytes{};
  ~CallKey() { explicit_bzero(bytes.data(), bytes.size()); }
};

// loadSealedTemplates(collection, key: Uint8Array(32), sealed: Uint8Array, sealedOffsets: Uint32Array(n + 1),
//   aad: Uint8Array, aadOffsets: Uint32Array(n + 1), keys: string[] | string (joined by '\0'), threads)
//   -> Promise<{added, replaced, failedRow, reason, bytes, version}>: failedRow -1 when every row opened and
// was loaded; else the lowest row that did not open and why ('short', 'version', 'tag', 'size'), and nothing
// was loaded. Other failures reject with an index error. The arrays are read in place until it settles.
Napi::Value LoadSealedTemplates(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto c = collectionArg(info, 0);
  auto key = typedArg<uint8_t, napi_uint8_array>(info, 1, "key");
  auto sealed = typedArg<uint8_t, napi_uint8_array>(info, 2, "sealed");
  auto sealedOffsets = typedArg<uint32_t, napi_uint32_array>(info, 3, "sealedOffsets");
  auto aad = typedArg<uint8_t, napi_uint8_array>(info, 4, "aad");
  auto aadOffsets = typedArg<uint32_t, napi_uint32_array>(info, 5, "aadOffsets");
  const double threads = info.Length() > 7 && info[7].IsNumber() ? info[7].As<Napi::Number>().DoubleValue() : 0;
  if (key.ElementLength() != 32) throw Napi::RangeError::New(env, "loadSealedTemplates: key is not 32 bytes");
  if (sealedOffsets.ElementLength() < 1 || aadOffsets.ElementLength() != sealedOffsets.ElementLength())
    throw Napi::RangeError::New(env, "loadSealedTemplates: the offsets differ in count");
  const size_t rows = sealedOffsets.ElementLength() - 1;
  // keys: one string joined by '\0', or string[] (a key holding '\0').
  auto keys = std::make_shared<std::vector<std::string>>(
      info.Length() > 6 && info[6].IsString() ? splitJoinedKeys(info[6].As<Napi::String>().Utf8Value(), rows)
                                              : stringArrayArg(info, 6, "keys"));
  if (keys->size() != rows) throw Napi::RangeError::New(env, "loadSealedTemplates: keys and offsets differ in count");

  auto callKey = std::make_shared<CallKey>();
  memcpy(callKey->bytes.data(), key.Data(), 32);
  auto batch = std::make_shared<SealedBatch>();
  batch->sealed = sealed.Data();
  batch->sealedBytes = sealed.ByteLength();
  batch->sealedOffsets = sealedOffsets.Data();
  batch->aad = aad.Data();
  batch->aadBytes = aad.ByteLength();
  batch->aadOffsets = aadOffsets.Data();
  batch->rows = rows;
  batch->dimension = c->dim();
  const unsigned n = threads >= 0 && threads <= 64 ? unsigned(threads) : 0;
  auto stats = std::make_shared<index::BulkStats>();
  auto opened = std::make_shared<SealedBatchResult>();
  auto* w = new PromiseWorker(
      env,
      [c, callKey, batch, keys, n, stats, opened] {
        IndexResult r = c->loadSealedTemplates(*batch, callKey->bytes.data(), *keys, n, stats.get(), opened.get());
        // A row that did not open is an answer, not a failure of the call.
        return opened->failedRow >= 0 ? IndexResult{} : r;
      },
      [stats, opened](Napi::Env env) -> Napi::Value {
        Napi::Object o = Napi::Object::New(env);
        o.Set("added", double(stats->added));
        o.Set("replaced", double(stats->replaced));
        o.Set("failedRow", double(opened->failedRow));
        o.Set("reason", sealedRowFaultName(opened->fault));
        o.Set("bytes", double(opened->bytes));
        o.Set("version", double(opened->version));
        return o;
      });
  for (Napi::Value v : {Napi::Value(sealed), Napi::Value(sealedOffsets), Napi::Value(aad), Napi::Value(aadOffsets)}) w->Keep(v);
  return PromiseWorker::Start(w);
}

}  // namespace

void addSealedLoadFunctions(Napi::Env env, Napi::Object o) {
  o.Set("loadSealedTemplates", Napi::Function::New(env, LoadSealedTemplates, "loadSealedTemplates"));
}

}  // namespace facecheck::addon::indexjs
