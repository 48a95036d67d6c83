// Similarity index binding, snapshots of a collection's int8 rows: exportCodes and importCodes, and
// importSealed, which reads and opens a sealed snapshot file straight into a collection.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "addon/index_js.h"

namespace facecheck::addon::indexjs {
namespace {

// exportCodes(collection) -> Promise<{layout, dim, stride, count, keys, codes, scales, sums}>: the rows in
// row order, copied under the collection's read lock off the event loop. The arrays are views of one
// native buffer handed to JS without another copy (freed when they are collected).
Napi::Value ExportCodes(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  auto dump = std::make_shared<index::CodeExport>();
  auto* w = new PromiseWorker(
      info.Env(), [c, dump] { return c->exportCodes(dump.get()); },
      [c, dump](Napi::Env env) -> Napi::Value {
        const size_t n = dump->count, stride = c->stats().codeStride;
        Napi::Uint8Array codes;
        Napi::Float32Array scales;
        Napi::Int32Array sums;
        if (n == 0) {
          codes = Napi::Uint8Array::New(env, 0);
          scales = Napi::Float32Array::New(env, 0);
          sums = Napi::Int32Array::New(env, 0);
        } else {
          uint8_t* base = reinterpret_cast<uint8_t*>(dump->codes);
          const size_t scalesAt = size_t(reinterpret_cast<uint8_t*>(dump->scales) - base);
          const size_t sumsAt = size_t(reinterpret_cast<uint8_t*>(dump->sums) - base);
          const size_t bytes = sumsAt + n * sizeof(int32_t);
          auto* hold = new std::shared_ptr<void>(dump->memory);
          Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(
              env, base, bytes, [](Napi::Env e, void*, std::shared_ptr<void>* h) {
                delete h;
              }, hold);
          Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(bytes));
          codes = Napi::Uint8Array::New(env, n * stride, ab, 0);
          scales = Napi::Float32Array::New(env, n, ab, scalesAt);
          sums = Napi::Int32Array::New(env, n, ab, sumsAt);
        }
        Napi::Object o = Napi::Object::New(env);
        o.Set("layout", index::kCodeLayout);
        o.Set("dim", double(c->dim()));
        o.Set("stride", double(stride));
        o.Set("count", double(n));
        o.Set("keys", Napi::String::New(env, dump->keys));
        o.Set("codes", codes);
        o.Set("scales", scales);
        o.Set("sums", sums);
        return o;
      });
  return PromiseWorker::Start(w);
}

// importCodes(collection, dump, clear: boolean, threads: number) -> Promise<{added, replaced}>. Every defect
// of the dump (layout, sizes, types, rows) is ERR_INDEX_BAD_ARGUMENT and loads nothing. The arrays are
// read in place: leave them unchanged until the promise settles.
Napi::Value ImportCodes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto c = collectionArg(info, 0);
  auto bad = [&](const std::string& what) { return indexError(env, IndexResult::fail(IndexCode::BadArgument, "code dump: " + what)); };
  if (info.Length() < 2 || !info[1].IsObject()) throw bad("not an object");
  Napi::Object d = info[1].As<Napi::Object>();
  auto count = [&](const char* name) -> size_t {
    Napi::Value v = d.Get(name);
    if (!v.IsNumber()) throw bad(std::string(name) + " is not a number");
    double x = v.As<Napi::Number>().DoubleValue();
    if (!(x >= 0 && x <= 4294967295.0 && x == std::floor(x))) throw bad(std::string(name) + " is out of range");
    return size_t(x);
  };
  auto typed = [&](const char* name, std::initializer_list<napi_typedarray_type> types) -> Napi::TypedArray {
    Napi::Value v = d.Get(name);
    if (!v.IsTypedArray()) throw bad(std::string(name) + " is not a typed array");
    Napi::TypedArray a = v.As<Napi::TypedArray>();
    for (auto t : types)
      if (a.TypedArrayType() == t) return a;
    throw bad(std::string(name) + " has the wrong element type");
  };
  Napi::Value layout = d.Get("layout");
  if (!layout.IsString() || layout.As<Napi::String>().Utf8Value() != index::kCodeLayout)
    throw bad(std::string("layout is not ") + index::kCodeLayout);
  const size_t dim = count("dim"), stride = count("stride"), n = count("count");
  if (dim != c->dim()) throw bad("dim differs from the collection's");
  if (stride != c->stats().codeStride) throw bad("stride differs from the collection's");
  Napi::Value keysValue = d.Get("keys");
  if (!keysValue.IsString()) throw bad("keys is not a string");
  Napi::TypedArray codes = typed("codes", {napi_uint8_array, napi_int8_array});
  Napi::TypedArray scales = typed("scales", {napi_float32_array});
  Napi::TypedArray sums = typed("sums", {napi_int32_array});
  if (codes.ByteLength() != n * stride) throw bad("codes must hold count x stride bytes");
  if (scales.ElementLength() != n) throw bad("scales must hold count values");
  if (sums.ElementLength() != n) throw bad("sums must hold count values");
  bool clear = info.Length() > 2 && info[2].ToBoolean().Value();
  unsigned threads = info.Length() > 3 && info[3].IsNumber() ? unsigned(std::max(0.0, info[3].As<Napi::Number>().DoubleValue())) : 0;

  auto keys = std::make_shared<std::string>(keysValue.As<Napi::String>().Utf8Value());
  auto rows = std::make_shared<index::CodeRows>();
  rows->count = n;
  rows->stride = stride;
  auto at = [](Napi::TypedArray a) { return static_cast<uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset(); };
  rows->codes = reinterpret_cast<const int8_t*>(at(codes));
  rows->scales = reinterpret_cast<const float*>(at(scales));
  rows->sums = reinterpret_cast<const int32_t*>(at(sums));
  auto stats = std::make_shared<index::BulkStats>();
  auto* w = new PromiseWorker(
      env,
      [c, keys, rows, clear, threads, stats]() -> IndexResult {
        if (rows->count > 0) {
          rows->keys.reserve(rows->count);
          std::string_view all(*keys);
          for (size_t start = 0;;) {
            size_t end = all.find('\0', start);
            rows->keys.push_back(all.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
            if (end == std::string_view::npos) break;
            start = end + 1;
          }
        } else if (!keys->empty()) {
          return IndexResult::fail(IndexCode::BadArgument, "code dump: keys given for no rows");
        }
        if (rows->keys.size() != rows->count)
          return IndexResult::fail(IndexCode::BadArgument, "code dump: keys and count differ");
        return c->importCodes(*rows, clear, threads, stats.get());
      },
      [stats](Napi::Env e) -> Napi::Value {
        Napi::Object o = Napi::Object::New(e);
        o.Set("added", double(stats->added));
        o.Set("replaced", double(stats->replaced));
        return o;
      });
  w->Keep(codes);
  w->Keep(scales);
  w->Keep(sums);
  return PromiseWorker::Start(w);
}

// sealedImportAvailable() -> {available, reason}: whether importSealed can open snapshots in this process
// (the process's OpenSSL functions found and checked); reason says why not.
Napi::Value SealedImportAvailable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string why;
  const bool available = index::sealedImportAvailable(&why);
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", available);
  o.Set("reason", why);
  return o;
}

const char* faultName(index::SealedFault f) {
  switch (f) {
    case index::SealedFault::Unavailable: return "unavailable";
    case index::SealedFault::Read: return "read";
    case index::SealedFault::Cut: return "cut";
    case index::SealedFault::Open: return "open";
    case index::SealedFault::Format: return "format";
    case index::SealedFault::None: break;
  }
  return nullptr;
}

// importSealed(collection, job, threads) -> Promise<{added, threads, readMs, openMs, keyMs}>, job =
// {fd, key (32 bytes), stride, count, chunks: [{offset, length, rows, nonce, aad}]}: the snapshot's rows
// replace the collection's content once every chunk opened (Collection::importSealed). A rejection from
// the file carries `reason`: 'open' (a tag does not verify), 'cut', 'format', 'read' or 'unavailable'.
// The descriptor must stay open until the promise settles; the key is copied (and wiped after the call).
Napi::Value ImportSealed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto c = collectionArg(info, 0);
  auto bad = [&](const std::string& what) { return indexError(env, IndexResult::fail(IndexCode::BadArgument, "sealed snapshot: " + what)); };
  if (info.Length() < 2 || !info[1].IsObject()) throw bad("not an object");
  Napi::Object job = info[1].As<Napi::Object>();
  auto whole = [&](Napi::Object o, const char* name, double max) -> double {
    Napi::Value v = o.Get(name);
    if (!v.IsNumber()) throw bad(std::string(name) + " is not a number");
    double x = v.As<Napi::Number>().DoubleValue();
    if (!(x >= 0 && x <= max && x == std::floor(x))) throw bad(std::string(name) + " is out of range");
    return x;
  };
  auto bytes = [&](Napi::Object o, const char* name) -> Napi::Uint8Array {
    Napi::Value v = o.Get(name);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) throw bad(std::string(name) + " is not a Uint8Array");
    return v.As<Napi::Uint8Array>();
  };
  auto rows = std::make_shared<index::SealedRows>();
  rows->fd = int(whole(job, "fd", 2147483647.0));
  Napi::Uint8Array key = bytes(job, "key");
  if (key.ByteLength() != sizeof(rows->key)) throw bad("key is not 32 bytes");
  std::memcpy(rows->key, key.Data(), sizeof(rows->key));
  rows->stride = size_t(whole(job, "stride", 1 << 20));
  rows->count = size_t(whole(job, "count", 4294967295.0));
  Napi::Value list = job.Get("chunks");
  if (!list.IsArray()) throw bad("chunks is not an array");
  Napi::Array chunks = list.As<Napi::Array>();
  rows->chunks.resize(chunks.Length());
  for (uint32_t i = 0; i < chunks.Length(); ++i) {
    Napi::Value v = chunks.Get(i);
    if (!v.IsObject()) throw bad("a chunk is not an object");
    Napi::Object o = v.As<Napi::Object>();
    index::SealedChunk& sc = rows->chunks[i];
    sc.offset = uint64_t(whole(o, "offset", 9007199254740991.0));
    sc.length = uint64_t(whole(o, "length", 9007199254740991.0));
    sc.rows = uint32_t(whole(o, "rows", 4294967295.0));
    Napi::Uint8Array nonce = bytes(o, "nonce"), aad = bytes(o, "aad");
    sc.nonce.assign(nonce.Data(), nonce.Data() + nonce.ByteLength());
    sc.aad.assign(aad.Data(), aad.Data() + aad.ByteLength());
  }
  unsigned threads = info.Length() > 2 && info[2].IsNumber() ? unsigned(std::max(0.0, std::min(64.0, info[2].As<Napi::Number>().DoubleValue()))) : 0;

  auto stats = std::make_shared<index::SealedStats>();
  auto fault = std::make_shared<index::SealedFault>(index::SealedFault::None);
  auto* w = new PromiseWorker(
      env, [c, rows, threads, stats, fault] { return c->importSealed(*rows, threads, stats.get(), fault.get()); },
      [stats](Napi::Env e) -> Napi::Value {
        Napi::Object o = Napi::Object::New(e);
        o.Set("added", double(stats->rows));
        o.Set("threads", double(stats->threads));
        o.Set("readMs", stats->readSeconds * 1e3);
        o.Set("openMs", stats->openSeconds * 1e3);
        o.Set("keyMs", stats->keySeconds * 1e3);
        return o;
      });
  w->OnReject([fault](Napi::Error& e) {
    if (const char* name = faultName(*fault)) e.Set("reason", name);
  });
  return PromiseWorker::Start(w);
}

}  // namespace

void addSnapshotFunctions(Napi::Env env, Napi::Object o) {
  o.Set("exportCodes", Napi::Function::New(env, ExportCodes, "exportCodes"));
  o.Set("importCodes", Napi::Function::New(env, ImportCodes, "importCodes"));
  o.Set("importSealed", Napi::Function::New(env, ImportSealed, "importSealed"));
  o.Set("sealedImportAvailable", Napi::Function::New(env, SealedImportAvailable, "sealedImportAvailable"));
}

}  // namespace facecheck::addon::indexjs
