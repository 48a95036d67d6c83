// Similarity index binding: `exports.index`, a thin Node-API layer over core/index (collections, writes,
// searches and reads here; snapshots and test hooks in index_snapshot_binding.cpp and index_hooks_binding.cpp).
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

#include "addon/index_js.h"

namespace facecheck::addon {
namespace {

using namespace indexjs;

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
    keys = std::make_shared<std::vector<std::string>>(
        splitJoinedKeys(info[2].As<Napi::String>().Utf8Value(), c->dim() ? data.ElementLength() / c->dim() : 0));
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
// is meant for the few dozen candidates of a search, which take less than a worker round trip.
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
  indexjs::addSnapshotFunctions(env, o);
  indexjs::addHookFunctions(env, o);
  indexjs::addSealedLoadFunctions(env, o);
  exports.Set("index", o);
}

}  // namespace facecheck::addon
