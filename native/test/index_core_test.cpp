// Standalone test of the index core (no Node): every kernel against the scalar reference, and the index
// against a float32 brute force. Built and run by test/similarity-index/index-core.test.ts (npm test, once per kernel) and by
// native/test/index-core-test.sh (adds ThreadSanitizer, and the aarch64/NEON build under qemu-user when a
// cross compiler is installed).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/index/kernels.h"
#include "core/index/row_source.h"
#include "core/index/similarity_index.h"

using namespace facecheck::index;

static int failures = 0;
#define CHECK(cond, ...)                         \
  do {                                           \
    if (!(cond)) {                               \
      ++failures;                                \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);                  \
      std::printf("\n");                         \
    }                                            \
  } while (0)

template <typename T>
struct Aligned {
  std::vector<uint8_t> raw;
  T* p;
  explicit Aligned(size_t n) : raw(n * sizeof(T) + 64, 0) {
    p = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(raw.data()) + 63) / 64 * 64);
  }
};

int main() {
  const Kernel* ks[8];
  size_t nk = availableKernels(ks, 8);
  std::printf("kernels:");
  for (size_t i = 0; i < nk; ++i) std::printf(" %s", ks[i]->name);
  std::printf(" (active %s)\n", activeKernel()->name);
  const Kernel* ref = scalarKernel();
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> code(-127, 127);
  std::normal_distribution<float> gauss(0.f, 1.f);

  // dot_i8 and dot_f32 at every length 0..300 and on adversarial data.
  for (size_t n = 0; n <= 300; ++n) {
    std::vector<int8_t> a(n), b(n);
    std::vector<float> fa(n), fb(n);
    for (size_t i = 0; i < n; ++i) a[i] = int8_t(code(rng)), b[i] = int8_t(code(rng)), fa[i] = gauss(rng), fb[i] = gauss(rng);
    for (int mode = 0; mode < 4; ++mode) {
      std::vector<int8_t> x = a, y = b;
      if (mode == 1) std::fill(x.begin(), x.end(), 0);
      if (mode == 2) { std::fill(x.begin(), x.end(), 127); std::fill(y.begin(), y.end(), -127); }
      if (mode == 3) { std::fill(x.begin(), x.end(), -127); std::fill(y.begin(), y.end(), -127); }
      int32_t want = ref->dot_i8(x.data(), y.data(), n);
      for (size_t k = 0; k < nk; ++k) {
        int32_t got = ks[k]->dot_i8(x.data(), y.data(), n);
        CHECK(got == want, "%s dot_i8 n=%zu mode=%d got %d want %d", ks[k]->name, n, mode, got, want);
      }
    }
    double exact = 0, mag = 0;
    for (size_t i = 0; i < n; ++i) exact += double(fa[i]) * fb[i], mag += std::fabs(double(fa[i]) * fb[i]);
    for (size_t k = 0; k < nk; ++k) {
      float got = ks[k]->dot_f32(fa.data(), fb.data(), n);
      CHECK(std::fabs(got - exact) <= 1e-6 * (mag + 1), "%s dot_f32 n=%zu got %g want %g", ks[k]->name, n, got, exact);
    }
  }

  // scan: every nq 1..9 and nr 1..11 at several strides; then select.
  for (size_t stride : {64, 128, 512, 576}) {
    for (size_t nq = 1; nq <= 9; ++nq) {
      for (size_t nr = 1; nr <= 11; ++nr) {
        Aligned<int8_t> q(nq * stride), x(nr * stride);
        std::vector<int32_t> sums(nr, 0);
        size_t dim = stride - (nq % 3) * 7;  // some zero padding
        for (size_t j = 0; j < nq; ++j)
          for (size_t d = 0; d < dim; ++d) q.p[j * stride + d] = int8_t(code(rng));
        for (size_t r = 0; r < nr; ++r)
          for (size_t d = 0; d < dim; ++d) {
            int8_t c = (nr == 5) ? int8_t(127) : (nr == 6 ? int8_t(-127) : int8_t(code(rng)));
            x.p[r * stride + d] = c;
            sums[r] += c;
          }
        std::vector<int32_t> want(nq * 16, 0);
        for (size_t j = 0; j < nq; ++j)
          for (size_t r = 0; r < nr; ++r) want[j * 16 + r] = ref->dot_i8(q.p + j * stride, x.p + r * stride, stride);
        for (size_t k = 0; k < nk; ++k) {
          size_t pb = (ks[k]->prepared_bytes(stride) + 63) / 64 * 64;
          Aligned<uint8_t> prep(nq * pb);
          for (size_t j = 0; j < nq; ++j) ks[k]->prepare(q.p + j * stride, stride, prep.p + j * pb);
          // The index passes prepared queries pb apart; pb == prepared_bytes here (multiples of 64).
          std::vector<int32_t> got(nq * 16, -1);
          ks[k]->scan(prep.p, nq, x.p, nr, stride, sums.data(), got.data(), 16);
          for (size_t j = 0; j < nq; ++j)
            for (size_t r = 0; r < nr; ++r)
              CHECK(got[j * 16 + r] == want[j * 16 + r], "%s scan stride=%zu nq=%zu nr=%zu j=%zu r=%zu got %d want %d",
                    ks[k]->name, stride, nq, nr, j, r, got[j * 16 + r], want[j * 16 + r]);
        }
      }
    }
  }
  for (size_t nr : {1, 7, 16, 17, 100, 256}) {
    std::vector<int32_t> raw(nr);
    std::vector<float> sc(nr);
    for (size_t r = 0; r < nr; ++r) raw[r] = int32_t(rng() % 200001) - 100000, sc[r] = 1e-5f * float(1 + rng() % 100);
    for (float thr : {-1e30f, 0.0f, 0.5f, 1e30f}) {
      std::vector<uint32_t> wi(nr), gi(nr);
      std::vector<float> ws(nr), gs(nr);
      size_t wn = ref->select(raw.data(), sc.data(), nr, 0.37f, thr, wi.data(), ws.data());
      for (size_t k = 0; k < nk; ++k) {
        size_t gn = ks[k]->select(raw.data(), sc.data(), nr, 0.37f, thr, gi.data(), gs.data());
        CHECK(gn == wn, "%s select count %zu vs %zu", ks[k]->name, gn, wn);
        for (size_t i = 0; i < std::min(gn, wn); ++i)
          CHECK(gi[i] == wi[i] && gs[i] == ws[i], "%s select entry %zu", ks[k]->name, i);
      }
    }
  }

  // encode() (AVX2 clone on x86-64) is bit-identical to normalise() + quantise() (baseline build).
  for (size_t dim : {1, 7, 8, 100, 512, 513}) {
    for (int t = 0; t < 200; ++t) {
      std::vector<float> v(dim), n1(dim), n2(dim);
      for (auto& x : v) x = gauss(rng) * (t % 3 == 0 ? 1e-30f : (t % 3 == 1 ? 1.0f : 1e30f));
      if (t == 5) std::fill(v.begin(), v.end(), 0.0f);
      size_t stride = (dim + 63) / 64 * 64;
      std::vector<int8_t> c1(stride), c2(stride);
      int32_t s1 = 0, s2 = 0;
      float sc1 = 0, sc2 = 0;
      bool ok1 = normalise(v.data(), dim, n1.data());
      sc1 = quantise(n1.data(), dim, stride, c1.data(), &s1);
      bool ok2 = encode(v.data(), dim, stride, n2.data(), c2.data(), &sc2, &s2);
      CHECK(ok1 && ok2 && n1 == n2 && c1 == c2 && s1 == s2 && sc1 == sc2, "encode != normalise+quantise dim=%zu t=%d", dim, t);
    }
    std::vector<float> v(dim, 1.0f), out(dim);
    v[dim / 2] = std::numeric_limits<float>::quiet_NaN();
    CHECK(!normalise(v.data(), dim, out.data()), "NaN rejected");
  }

  // Index vs float32 brute force, every kernel, random gallery with duplicates, dims 512 and 100.
  for (size_t dim : {512, 100}) {
    Collection c(dim);
    const size_t n = 5000;
    std::vector<float> data(n * dim);
    for (auto& v : data) v = gauss(rng);
    for (size_t i = 0; i < 20; ++i) std::memcpy(&data[(n - 1 - i) * dim], &data[i * dim], dim * 4);  // duplicates
    std::vector<std::string> keys;
    for (size_t i = 0; i < n; ++i) keys.push_back("p" + std::to_string(i));
    BulkStats bs;
    IndexResult r = c.bulkLoad(data.data(), n, keys, true, 0, &bs);
    CHECK(r.ok() && bs.added == n && c.size() == n, "bulkLoad");
    const size_t nq = 40;
    std::vector<float> qs(nq * dim);
    for (size_t j = 0; j < nq; ++j)
      for (size_t d = 0; d < dim; ++d) qs[j * dim + d] = (j < 10 ? data[j * dim + d] : 0.f) + 0.5f * gauss(rng);
    SearchOptions o;
    o.k = 10;
    std::vector<std::vector<Hit>> want, got;
    CHECK(c.exactSearch(qs.data(), nq, o, &want).ok(), "exactSearch");
    for (size_t k = 0; k < nk; ++k) {
      for (unsigned threads : {1u, 2u}) {
        o.kernel = ks[k];
        o.threads = threads;
        CHECK(c.search(qs.data(), nq, o, &got).ok(), "search");
        size_t mism = 0;
        for (size_t j = 0; j < nq; ++j)
          for (size_t i = 0; i < 10; ++i)
            if (got[j][i].key != want[j][i].key || std::fabs(got[j][i].score - want[j][i].score) > 1e-5f) ++mism;
        CHECK(mism == 0, "%s threads=%u dim=%zu: %zu mismatches vs brute force", ks[k]->name, threads, dim, mism);
      }
    }
  }
  // Concurrent searches (1 and 2 scan threads) while two writers upsert, remove and bulk-load (run under
  // ThreadSanitizer by index-core-test.sh when INDEX_CORE_TSAN=1).
  {
    const size_t dim = 64, n = 3000;
    Collection c(dim);
    std::vector<float> data(n * dim);
    for (auto& v : data) v = gauss(rng);
    std::vector<std::string> keys;
    for (size_t i = 0; i < n; ++i) keys.push_back("k" + std::to_string(i));
    BulkStats bs;
    CHECK(c.bulkLoad(data.data(), n, keys, true, 2, &bs).ok(), "stress bulk load");
    std::atomic<bool> stop{false};
    std::atomic<int> searches{0}, bad{0};
    auto searcher = [&](unsigned th) {
      std::vector<std::vector<Hit>> out;
      SearchOptions o;
      o.k = 10;
      o.threads = th;
      while (!stop) {
        if (!c.search(data.data(), 4, o, &out).ok() || out[0].size() != 10) bad++;
        searches++;
      }
    };
    auto writer = [&](int w) {
      // The writes begin once both searchers run, so they overlap searches however the threads are scheduled.
      while (searches.load() < 2) std::this_thread::yield();
      std::vector<float> v(dim);
      std::mt19937 r(w);
      std::normal_distribution<float> g(0.f, 1.f);
      for (int i = 0; i < 300; ++i) {
        for (auto& x : v) x = g(r);
        std::string k = "w" + std::to_string(w) + "-" + std::to_string(i % 50);
        bool flag = false;
        IndexResult res = i % 3 == 2 ? c.remove(k, &flag) : c.write(k, v.data(), WriteMode::Upsert, &flag);
        if (!res.ok()) bad++;
        if (i % 97 == 0) {
          BulkStats local;
          if (!c.bulkLoad(data.data(), 100, std::vector<std::string>(keys.begin(), keys.begin() + 100), false, 2, &local).ok()) bad++;
        }
      }
    };
    std::vector<std::thread> ts;
    ts.emplace_back(searcher, 1u);
    ts.emplace_back(searcher, 2u);
    ts.emplace_back(writer, 1);
    ts.emplace_back(writer, 2);
    ts[2].join();
    ts[3].join();
    stop = true;
    ts[0].join();
    ts[1].join();
    CHECK(bad == 0 && searches > 0, "concurrent stress: %d failures in %d searches", bad.load(), searches.load());
  }

  // The row check of importCodes and importSealed (a vectorised form) against its plain definition, on
  // valid rows and rows spoilt one way each, at lengths that exercise every tail and the int16 lanes' limit.
  {
    auto plain = [](const int8_t* c, size_t dim, size_t stride, float scale, int32_t sum) {
      if (!(scale >= 0.0f && scale <= 1.0f)) return false;
      int32_t s = 0;
      for (size_t d = 0; d < dim; ++d) {
        if (c[d] == -128) return false;
        s += c[d];
      }
      for (size_t d = dim; d < stride; ++d)
        if (c[d] != 0) return false;
      return s == sum;
    };
    std::mt19937 r(3);
    int disagree = 0, valid = 0, tried = 0;
    for (size_t dim : {1, 31, 32, 33, 100, 704, 8191, 8192, 9000, 20000}) {
      const size_t stride = (dim + 63) / 64 * 64;
      for (int spoil = 0; spoil < 5; ++spoil) {
        for (int extreme = 0; extreme < 2; ++extreme) {
          std::vector<int8_t> row(stride, 0);
          int32_t sum = 0;
          for (size_t d = 0; d < dim; ++d) {
            row[d] = int8_t(extreme ? (r() % 2 ? 127 : -127) : int(r() % 255) - 127);
            sum += row[d];
          }
          float scale = 0.5f;
          if (spoil == 1) row[r() % dim] = -128;
          if (spoil == 2) sum += 1;
          if (spoil == 3 && stride > dim) row[dim + r() % (stride - dim)] = 1;
          if (spoil == 4) scale = std::numeric_limits<float>::quiet_NaN();
          const bool want = plain(row.data(), dim, stride, scale, sum);
          disagree += validCodeRow(row.data(), dim, stride, scale, sum) != want;
          valid += want;
          tried++;
        }
      }
    }
    CHECK(disagree == 0 && valid > 0, "validCodeRow: %d of %d rows disagree with the plain check", disagree, tried);
  }

  // importSealed in a program without OpenSSL's functions (this one, unless it links libcrypto): it says
  // so, and the collection keeps its rows.
  {
    std::string why;
    if (!sealedImportAvailable(&why)) {
      Collection c(16, false);
      std::vector<float> v(16, 0.25f);
      bool added = false;
      CHECK(c.write("kept", v.data(), WriteMode::Upsert, &added).ok(), "write");
      SealedRows rows;
      rows.stride = 64;
      SealedStats stats;
      SealedFault fault = SealedFault::None;
      IndexResult res = c.importSealed(rows, 0, &stats, &fault);
      CHECK(!res.ok() && fault == SealedFault::Unavailable && !why.empty() && c.size() == 1,
            "importSealed without OpenSSL: fault %d, size %zu, why '%s'", int(fault), c.size(), why.c_str());
    } else {
      std::printf("importSealed: OpenSSL found in this program, the unavailable case not tested\n");
    }
  }

  std::printf("%s (%d failures)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
