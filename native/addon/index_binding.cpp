// Similarity index binding: `exports.index`, a thin Node-API layer over core/index.
// Everything that takes a collection lock (writes, searches, bulk load) runs in a Napi::AsyncWorker and
// returns a Promise, so the event loop never waits for a scan or for a write waiting on a scan.
// Failures of the index reject with an Error carrying `code` (ERR_INDEX_*) and `status` (error table name);
// wrong argument types throw a TypeError synchronously.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "addon/bindings.h"
#include "core/error_table.h"
#include "core/index/kernels.h"
#include "core/index/similarity_index.h"

namespace facecheck::addon {
namespace {

using index::Collection;
using index::IndexCode;
using index::IndexResult;
using index::Kernel;

Napi::Error indexError(Napi::Env env, const IndexResult& r) {
  Napi::Error e = Napi::Error::New(env, r.detail.empty() ? index::indexCodeName(r.code) : r.detail);
  e.Set("code", Napi::String::New(env, index::indexCodeName(r.code)));
  e.Set("status", Napi::String::New(env, errorInfo(index::toStatus(r.code)).name));
  return e;
}

[[noreturn]] void typeError(Napi::Env env, const std::string& what) { throw Napi::TypeError::New(env, what); }

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsString()) typeError(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsNumber()) typeError(info.Env(), std::string(name) + " must be a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

template <typename T, napi_typedarray_type Type>
Napi::TypedArrayOf<T> typedArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != Type)
    typeError(info.Env(), std::string(name) + " has the wrong type");
  return info[i].As<Napi::TypedArrayOf<T>>();
}

Napi::Float32Array floatArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typedArg<float, napi_float32_array>(info, i, name);
}

std::vector<std::string> stringArrayArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsArray()) typeError(info.Env(), std::string(name) + " must be an array of strings");
  Napi::Array a = info[i].As<Napi::Array>();
  const uint32_t n = a.Length();
  std::vector<std::string> out;
  out.reserve(n);
  for (uint32_t j = 0; j < n; ++j) {
    Napi::Value v = a.Get(j);
    if (!v.IsString()) typeError(info.Env(), std::string(name) + " must be an array of strings");
    out.push_back(v.As<Napi::String>().Utf8Value());
  }
  return out;
}

const Kernel* kernelNamed(Napi::Env env, Napi::Value v) {
  if (v.IsUndefined() || v.IsNull()) return nullptr;
  if (!v.IsString()) typeError(env, "kernel must be a string");
  std::string name = v.As<Napi::String>().Utf8Value();
  const Kernel* k = index::kernelByName(name.c_str());
  if (!k) throw indexError(env, IndexResult::fail(IndexCode::BadArgument, "kernel " + name + " is not available"));
  return k;
}

// A collection or a thrown ERR_INDEX_NO_COLLECTION.
std::shared_ptr<Collection> collectionArg(const Napi::CallbackInfo& info, size_t i) {
  std::string name = stringArg(info, i, "collection");
  auto c = index::registry().find(name);
  if (!c) throw indexError(info.Env(), IndexResult::fail(IndexCode::NoCollection, "no collection " + name));
  return c;
}

// Runs `run` off the event loop, then settles the promise with `resolve` (on the JS thread) or the error.
class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, std::function<IndexResult()> run, std::function<Napi::Value(Napi::Env)> resolve)
      : Napi::AsyncWorker(env, "faceCheckIndex"),
        deferred_(Napi::Promise::Deferred::New(env)),
        run_(std::move(run)),
        resolve_(std::move(resolve)) {}

  // Keeps a JS value (an input typed array) alive until the work is done.
  void Keep(Napi::Value v) { kept_.push_back(Napi::Persistent(v)); }

  static Napi::Promise Start(PromiseWorker* w) {
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override { result_ = run_(); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!result_.ok()) {
      deferred_.Reject(indexError(env, result_).Value());
      return;
    }
    try {
      deferred_.Resolve(resolve_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<IndexResult()> run_;
  std::function<Napi::Value(Napi::Env)> resolve_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  IndexResult result_;
};

Napi::Value hitsToJs(Napi::Env env, const std::vector<std::vector<index::Hit>>& res) {
  Napi::Array out = Napi::Array::New(env, res.size());
  for (size_t j = 0; j < res.size(); ++j) {
    const auto& hits = res[j];
    Napi::Array keys = Napi::Array::New(env, hits.size());
    Napi::Float32Array scores = Napi::Float32Array::New(env, hits.size());
    for (size_t i = 0; i < hits.size(); ++i) {
      keys.Set(uint32_t(i), Napi::String::New(env, hits[i].key));
      scores[i] = hits[i].score;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("keys", keys);
    o.Set("scores", scores);
    out.Set(uint32_t(j), o);
  }
  return out;
}

// ---- kernels ----

Napi::Value Kernels(const Napi::CallbackInfo& info) {
  const Kernel* ks[8];
  size_t n = index::availableKernels(ks, 8);
  Napi::Array a = Napi::Array::New(info.Env(), n);
  for (size_t i = 0; i < n; ++i) a.Set(uint32_t(i), Napi::String::New(info.Env(), ks[i]->name));
  return a;
}

Napi::Value ActiveKernel(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), index::activeKernel()->name);
}

Napi::Value KernelNote(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), index::kernelOverrideNote());
}

// ---- collections ----

// createCollection(name, dim, options?: { vectors?: boolean }) -> boolean created. vectors (default true):
// keep the float32 templates (exact scores from the index itself); false keeps only the int8 rows.
Napi::Value CreateCollection(const Napi::CallbackInfo& info) {
  std::string name = stringArg(info, 0, "collection");
  double dim = numberArg(info, 1, "dim");
  if (!(dim >= 1 && dim <= 65536 && dim == std::floor(dim))) typeError(info.Env(), "dim must be an integer in 1..65536");
  bool vectors = true;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsObject()) typeError(info.Env(), "options must be an object");
    Napi::Value v = info[2].As<Napi::Object>().Get("vectors");
    if (!v.IsUndefined()) {
      if (!v.IsBoolean()) typeError(info.Env(), "vectors must be a boolean");
      vectors = v.As<Napi::Boolean>().Value();
    }
  }
  bool created = false;
  IndexResult r = index::registry().create(name, size_t(dim), &created, vectors);
  if (!r.ok()) throw indexError(info.Env(), r);
  return Napi::Boolean::New(info.Env(), created);
}

Napi::Value DropCollection(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), index::registry().drop(stringArg(info, 0, "collection")));
}

Napi::Value ListCollections(const Napi::CallbackInfo& info) {
  auto names = index::registry().names();
  Napi::Array a = Napi::Array::New(info.Env(), names.size());
  for (size_t i = 0; i < names.size(); ++i) a.Set(uint32_t(i), Napi::String::New(info.Env(), names[i]));
  return a;
}

Napi::Value Size(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(collectionArg(info, 0)->size()));
}

Napi::Value Stats(const Napi::CallbackInfo& info) {
  index::CollectionStats s = collectionArg(info, 0)->stats();
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("size", double(s.size));
  o.Set("dim", double(s.dim));
  o.Set("codeStride", double(s.codeStride));
  o.Set("bytesAllocated", double(s.bytesAllocated));
  o.Set("bytesKeys", double(s.bytesKeys));
  o.Set("vectors", s.vectors);
  return o;
}

// ---- writes ----

// write(collection, key, template: Float32Array, mode: 'insert' | 'replace' | 'upsert') -> Promise<boolean added>
Napi::Value Write(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  std::string key = stringArg(info, 1, "key");
  Napi::Float32Array v = floatArg(info, 2, "template");
  std::string m = stringArg(info, 3, "mode");
  index::WriteMode mode = m == "insert" ? index::WriteMode::Insert
                          : m == "replace" ? index::WriteMode::Replace
                          : m == "upsert" ? index::WriteMode::Upsert
                                          : (typeError(info.Env(), "mode must be insert, replace or upsert"), index::WriteMode::Insert);
  if (v.ElementLength() != c->dim()) typeError(info.Env(), "template length differs from the collection dim");
  auto vec = std::make_shared<std::vector<float>>(v.Data(), v.Data() + v.ElementLength());
  auto added = std::make_shared<bool>(false);
  auto* w = new PromiseWorker(
      info.Env(), [c, key, vec, mode, added] { return c->write(key, vec->data(), mode, added.get()); },
      [added](Napi::Env env) -> Napi::Value { return Napi::Boolean::New(env, *added); });
  return PromiseWorker::Start(w);
}

Napi::Value Remove(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  std::string key = stringArg(info, 1, "key");
  auto removed = std::make_shared<bool>(false);
  auto* w = new PromiseWorker(
      info.Env(), [c, key, removed] { return c->remove(key, removed.get()); },
      [removed](Napi::Env env) -> Napi::Value { return Napi::Boolean::New(env, *removed); });
  return PromiseWorker::Start(w);
}

Napi::Value Clear(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  auto* w = new PromiseWorker(
      info.Env(), [c] { return c->clear(); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); });
  return PromiseWorker::Start(w);
}

// bulkLoad(collection, templates: Float32Array (n * dim), keys: string[] | string (joined by '\0'), clear: boolean,
//          threads: number)
//   -> Promise<{added, replaced}>. The templates are read in place: do not change them until it settles.
Napi::Value BulkLoad(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  Napi::Float32Array data = floatArg(info, 1, "templates");
  // keys: string[], or one string of all keys joined by '\0' (one conversion instead of one per key).
  std::shared_ptr<std::vector<std::string>> keys;
  if (info.Length() > 2 && info[2].IsString()) {
    const std::string joined = info[2].As<Napi::String>().Utf8Value();
    keys = std::make_shared<std::vector<std::string>>();
    if (c->dim() && data.ElementLength() / c->dim() > 0) {
      keys->reserve(data.ElementLength() / c->dim());
      size_t start = 0;
      for (;;) {
        size_t end = joined.find('\0', start);
        keys->emplace_back(joined, start, end == std::string::npos ? std::string::npos : end - start);
        if (end == std::string::npos) break;
        start = end + 1;
      }
    }
  } else {
    keys = std::make_shared<std::vector<std::string>>(stringArrayArg(info, 2, "keys"));
  }
  bool clear = info.Length() > 3 && info[3].ToBoolean().Value();
  unsigned threads = info.Length() > 4 && info[4].IsNumber() ? unsigned(std::max(0.0, info[4].As<Napi::Number>().DoubleValue())) : 0;
  if (data.ElementLength() != keys->size() * c->dim())
    typeError(info.Env(), "templates length must be keys.length * dim");
  const float* ptr = data.Data();
  const size_t n = keys->size();
  auto stats = std::make_shared<index::BulkStats>();
  auto* w = new PromiseWorker(
      info.Env(), [c, ptr, n, keys, clear, threads, stats] { return c->bulkLoad(ptr, n, *keys, clear, threads, stats.get()); },
      [stats](Napi::Env env) -> Napi::Value {
        Napi::Object o = Napi::Object::New(env);
        o.Set("added", double(stats->added));
        o.Set("replaced", double(stats->replaced));
        return o;
      });
  w->Keep(data);
  return PromiseWorker::Start(w);
}

// ---- reads ----

index::SearchOptions searchOptions(const Napi::CallbackInfo& info, size_t i) {
  index::SearchOptions o;
  if (i >= info.Length() || info[i].IsUndefined()) return o;
  if (!info[i].IsObject()) typeError(info.Env(), "options must be an object");
  Napi::Object opts = info[i].As<Napi::Object>();
  auto num = [&](const char* name, double lo, double hi, double* out) {
    Napi::Value v = opts.Get(name);
    if (v.IsUndefined() || v.IsNull()) return false;
    if (!v.IsNumber()) typeError(info.Env(), std::string(name) + " must be a number");
    double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= lo && d <= hi)) typeError(info.Env(), std::string(name) + " is out of range");
    *out = d;
    return true;
  };
  double d;
  if (num("k", 1, 1e9, &d)) o.k = size_t(d);
  if (num("floor", -1e30, 1e30, &d)) {
    // The smallest float >= d, so that (float score >= floor) means the same as in double.
    float f = float(d);
    if (double(f) < d) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    o.floor = f;
  }
  if (num("threads", 0, 64, &d)) o.threads = unsigned(d);
  if (num("rerank", 0, 1e9, &d)) o.rerank = size_t(d);
  o.kernel = kernelNamed(info.Env(), opts.Get("kernel"));
  return o;
}

// search(collection, queries: Float32Array (nq * dim), options) -> Promise<{keys, scores}[]>
Napi::Value SearchImpl(const Napi::CallbackInfo& info, bool exact) {
  auto c = collectionArg(info, 0);
  Napi::Float32Array q = floatArg(info, 1, "queries");
  if (q.ElementLength() == 0 || q.ElementLength() % c->dim() != 0)
    typeError(info.Env(), "queries length must be a positive multiple of the collection dim");
  index::SearchOptions o = searchOptions(info, 2);
  const size_t nq = q.ElementLength() / c->dim();
  auto qs = std::make_shared<std::vector<float>>(q.Data(), q.Data() + q.ElementLength());
  auto res = std::make_shared<std::vector<std::vector<index::Hit>>>();
  auto* w = new PromiseWorker(
      info.Env(),
      [c, qs, nq, o, res, exact] {
        return exact ? c->exactSearch(qs->data(), nq, o, res.get()) : c->search(qs->data(), nq, o, res.get());
      },
      [res](Napi::Env env) { return hitsToJs(env, *res); });
  return PromiseWorker::Start(w);
}

Napi::Value Search(const Napi::CallbackInfo& info) { return SearchImpl(info, false); }
Napi::Value ExactSearch(const Napi::CallbackInfo& info) { return SearchImpl(info, true); }

Napi::Value Get(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  std::string key = stringArg(info, 1, "key");
  auto out = std::make_shared<std::vector<float>>();
  auto missing = std::make_shared<bool>(false);
  auto* w = new PromiseWorker(
      info.Env(),
      [c, key, out, missing] {
        IndexResult r = c->get(key, out.get());
        if (r.code == IndexCode::KeyNotFound) {
          *missing = true;
          return IndexResult{};
        }
        return r;
      },
      [out, missing](Napi::Env env) -> Napi::Value {
        if (*missing) return env.Null();
        Napi::Float32Array a = Napi::Float32Array::New(env, out->size());
        std::memcpy(a.Data(), out->data(), out->size() * sizeof(float));
        return a;
      });
  return PromiseWorker::Start(w);
}

// score(collection, query: Float32Array (dim), keys: string[]) -> Promise<Float32Array> (NaN = key absent)
Napi::Value Score(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  Napi::Float32Array q = floatArg(info, 1, "query");
  if (q.ElementLength() != c->dim()) typeError(info.Env(), "query length differs from the collection dim");
  auto keys = std::make_shared<std::vector<std::string>>(stringArrayArg(info, 2, "keys"));
  auto qv = std::make_shared<std::vector<float>>(q.Data(), q.Data() + q.ElementLength());
  auto out = std::make_shared<std::vector<float>>();
  auto* w = new PromiseWorker(
      info.Env(), [c, qv, keys, out] { return c->score(qv->data(), *keys, out.get()); },
      [out](Napi::Env env) -> Napi::Value {
        Napi::Float32Array a = Napi::Float32Array::New(env, out->size());
        if (!out->empty()) std::memcpy(a.Data(), out->data(), out->size() * sizeof(float));
        return a;
      });
  return PromiseWorker::Start(w);
}

// scoreTemplates(query: Float32Array (dim), templates: Float32Array (m * dim)) -> Float32Array (m):
// the cosines score() computes (both sides normalised by the index, the active kernel's float32 dot), for
// templates the caller holds (re-ranking the candidates of a collection without vectors). Synchronous: it
// is meant for the few dozen candidates of a search (~0.05 ms), less than a worker round trip.
Napi::Value ScoreTemplates(const Napi::CallbackInfo& info) {
  Napi::Float32Array q = floatArg(info, 0, "query");
  Napi::Float32Array t = floatArg(info, 1, "templates");
  const size_t dim = q.ElementLength();
  if (dim == 0 || t.ElementLength() % dim != 0) typeError(info.Env(), "templates length must be a multiple of the query length");
  const size_t m = t.ElementLength() / dim;
  Napi::Float32Array out = Napi::Float32Array::New(info.Env(), m);
  IndexResult r = index::cosines(q.Data(), t.Data(), m, dim, out.Data());
  if (!r.ok()) throw indexError(info.Env(), r);
  return out;
}

// ---- snapshots of the int8 rows ----

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

// ---- test and benchmark hooks ----

// streamCodes(collection, threads, kernel?) -> Promise<{seconds, bytes}>: the memory-read reference.
Napi::Value StreamCodes(const Napi::CallbackInfo& info) {
  auto c = collectionArg(info, 0);
  unsigned threads = unsigned(std::max(0.0, numberArg(info, 1, "threads")));
  const Kernel* k = info.Length() > 2 ? kernelNamed(info.Env(), info[2]) : nullptr;
  auto secs = std::make_shared<double>(0);
  auto bytes = std::make_shared<size_t>(0);
  auto* w = new PromiseWorker(
      info.Env(), [c, threads, k, secs, bytes] { return c->streamCodes(k, threads, secs.get(), bytes.get()); },
      [secs, bytes](Napi::Env env) -> Napi::Value {
        Napi::Object o = Napi::Object::New(env);
        o.Set("seconds", *secs);
        o.Set("bytes", double(*bytes));
        return o;
      });
  return PromiseWorker::Start(w);
}

const Kernel* requiredKernel(const Napi::CallbackInfo& info, size_t i) {
  const Kernel* k = kernelNamed(info.Env(), i < info.Length() ? info[i] : info.Env().Undefined());
  return k ? k : index::activeKernel();
}

// dotI8(kernel, a: Int8Array, b: Int8Array) -> number (any length; codes in [-127, 127])
Napi::Value DotI8(const Napi::CallbackInfo& info) {
  const Kernel* k = requiredKernel(info, 0);
  auto a = typedArg<int8_t, napi_int8_array>(info, 1, "a");
  auto b = typedArg<int8_t, napi_int8_array>(info, 2, "b");
  if (a.ElementLength() != b.ElementLength()) typeError(info.Env(), "a and b differ in length");
  return Napi::Number::New(info.Env(), k->dot_i8(a.Data(), b.Data(), a.ElementLength()));
}

// dotF32(kernel, a: Float32Array, b: Float32Array) -> number
Napi::Value DotF32(const Napi::CallbackInfo& info) {
  const Kernel* k = requiredKernel(info, 0);
  Napi::Float32Array a = floatArg(info, 1, "a"), b = floatArg(info, 2, "b");
  if (a.ElementLength() != b.ElementLength()) typeError(info.Env(), "a and b differ in length");
  return Napi::Number::New(info.Env(), k->dot_f32(a.Data(), b.Data(), a.ElementLength()));
}

// scanI8(kernel, queries: Int8Array (nq * dim), rows: Int8Array (nr * dim), dim) -> Int32Array (nq * nr):
// the block scan of the kernel (rows padded to the 64-byte stride here), for tests.
Napi::Value ScanI8(const Napi::CallbackInfo& info) {
  const Kernel* k = requiredKernel(info, 0);
  auto qa = typedArg<int8_t, napi_int8_array>(info, 1, "queries");
  auto ra = typedArg<int8_t, napi_int8_array>(info, 2, "rows");
  double dd = numberArg(info, 3, "dim");
  if (!(dd >= 1 && dd <= 65536)) typeError(info.Env(), "dim out of range");
  const size_t dim = size_t(dd);
  if (qa.ElementLength() % dim || ra.ElementLength() % dim) typeError(info.Env(), "lengths must be multiples of dim");
  const size_t nq = qa.ElementLength() / dim, nr = ra.ElementLength() / dim;
  const size_t stride = (dim + index::kCodeAlign - 1) / index::kCodeAlign * index::kCodeAlign;
  const size_t pb = k->prepared_bytes(stride);  // a multiple of 64: queries are contiguous
  auto aligned = [](std::vector<uint8_t>& buf, size_t bytes) {
    buf.assign(bytes + 64, 0);
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) / 64 * 64);
  };
  std::vector<uint8_t> qbuf, pbuf, rbuf;
  int8_t* qp = reinterpret_cast<int8_t*>(aligned(qbuf, nq * stride));
  uint8_t* pp = aligned(pbuf, nq * pb);
  int8_t* rp = reinterpret_cast<int8_t*>(aligned(rbuf, nr * stride));
  std::vector<int32_t> sums(nr, 0);
  for (size_t j = 0; j < nq; ++j) {
    std::memcpy(qp + j * stride, qa.Data() + j * dim, dim);
    k->prepare(qp + j * stride, stride, pp + j * pb);
  }
  for (size_t r = 0; r < nr; ++r) {
    std::memcpy(rp + r * stride, ra.Data() + r * dim, dim);
    for (size_t d = 0; d < dim; ++d) sums[r] += ra.Data()[r * dim + d];
  }
  Napi::Int32Array out = Napi::Int32Array::New(info.Env(), nq * nr);
  for (size_t r0 = 0; r0 < nr; r0 += index::kScanBlock) {
    size_t cnt = std::min(index::kScanBlock, nr - r0);
    k->scan(pp, nq, rp + r0 * stride, cnt, stride, sums.data() + r0, out.Data() + r0, nr);
  }
  return out;
}

// quantise(templates: Float32Array (n * dim), dim) -> {codes: Int8Array (n * dim), scales: Float32Array (n)}:
// the index's own normalisation and int8 codes (benchmarks feed them to other libraries).
Napi::Value Quantise(const Napi::CallbackInfo& info) {
  Napi::Float32Array v = floatArg(info, 0, "templates");
  double dd = numberArg(info, 1, "dim");
  if (!(dd >= 1 && dd <= 65536)) typeError(info.Env(), "dim out of range");
  const size_t dim = size_t(dd);
  if (v.ElementLength() % dim) typeError(info.Env(), "length must be a multiple of dim");
  const size_t n = v.ElementLength() / dim;
  const size_t stride = (dim + index::kCodeAlign - 1) / index::kCodeAlign * index::kCodeAlign;
  Napi::Int8Array codes = Napi::Int8Array::New(info.Env(), n * dim);
  Napi::Float32Array scales = Napi::Float32Array::New(info.Env(), n);
  std::vector<float> norm(dim);
  std::vector<int8_t> row(stride);
  for (size_t i = 0; i < n; ++i) {
    if (!index::normalise(v.Data() + i * dim, dim, norm.data()))
      throw indexError(info.Env(), IndexResult::fail(IndexCode::BadArgument, "template has a NaN or an infinity"));
    int32_t sum;
    scales[i] = index::quantise(norm.data(), dim, stride, row.data(), &sum);
    std::memcpy(codes.Data() + i * dim, row.data(), dim);
  }
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("codes", codes);
  o.Set("scales", scales);
  return o;
}

}  // namespace

void InitIndexBinding(Napi::Env env, Napi::Object exports) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("kernels", Napi::Function::New(env, Kernels, "kernels"));
  o.Set("activeKernel", Napi::Function::New(env, ActiveKernel, "activeKernel"));
  o.Set("kernelNote", Napi::Function::New(env, KernelNote, "kernelNote"));
  o.Set("createCollection", Napi::Function::New(env, CreateCollection, "createCollection"));
  o.Set("dropCollection", Napi::Function::New(env, DropCollection, "dropCollection"));
  o.Set("listCollections", Napi::Function::New(env, ListCollections, "listCollections"));
  o.Set("size", Napi::Function::New(env, Size, "size"));
  o.Set("stats", Napi::Function::New(env, Stats, "stats"));
  o.Set("write", Napi::Function::New(env, Write, "write"));
  o.Set("remove", Napi::Function::New(env, Remove, "remove"));
  o.Set("clear", Napi::Function::New(env, Clear, "clear"));
  o.Set("bulkLoad", Napi::Function::New(env, BulkLoad, "bulkLoad"));
  o.Set("search", Napi::Function::New(env, Search, "search"));
  o.Set("exactSearch", Napi::Function::New(env, ExactSearch, "exactSearch"));
  o.Set("get", Napi::Function::New(env, Get, "get"));
  o.Set("score", Napi::Function::New(env, Score, "score"));
  o.Set("scoreTemplates", Napi::Function::New(env, ScoreTemplates, "scoreTemplates"));
  o.Set("exportCodes", Napi::Function::New(env, ExportCodes, "exportCodes"));
  o.Set("importCodes", Napi::Function::New(env, ImportCodes, "importCodes"));
  o.Set("streamCodes", Napi::Function::New(env, StreamCodes, "streamCodes"));
  o.Set("dotI8", Napi::Function::New(env, DotI8, "dotI8"));
  o.Set("dotF32", Napi::Function::New(env, DotF32, "dotF32"));
  o.Set("scanI8", Napi::Function::New(env, ScanI8, "scanI8"));
  o.Set("quantise", Napi::Function::New(env, Quantise, "quantise"));
  exports.Set("index", o);
}

}  // namespace facecheck::addon
