// Similarity index binding, test and benchmark hooks: the memory-read reference, the kernels' primitives
// on given data, and the index's own quantisation.
#include <cstring>
#include <vector>

#include "addon/index_js.h"

namespace facecheck::addon::indexjs {
namespace {

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

void addHookFunctions(Napi::Env env, Napi::Object o) {
  o.Set("streamCodes", Napi::Function::New(env, StreamCodes, "streamCodes"));
  o.Set("dotI8", Napi::Function::New(env, DotI8, "dotI8"));
  o.Set("dotF32", Napi::Function::New(env, DotF32, "dotF32"));
  o.Set("scanI8", Napi::Function::New(env, ScanI8, "scanI8"));
  o.Set("quantise", Napi::Function::New(env, Quantise, "quantise"));
}

}  // namespace facecheck::addon::indexjs
