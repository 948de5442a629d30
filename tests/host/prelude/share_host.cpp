// Held preludes and prelude sharing, across functions of one library
// (share_a.toy: scale_a, shift_a) and across libraries (share_b.toy: neg_b,
// with other names for the same shape), each library linking the static
// libdccrt as dccc writes them.
//
// Checks, with results compared to values computed here:
//  - the simple calls share one entry of the process-wide cache (one miss,
//    then hits from the other function and the other library);
//  - X_prelude(args, &p) makes a handle, adds to it, and functions computing
//    the same arrays from the same lengths hold one entry;
//  - X_with_prelude(p, ...) gives the same results without touching the
//    cache, for equal lengths in other arrays too;
//  - a handle for other lengths or sizes, one without the function's arrays,
//    and NULL are clear errors that write nothing, as are bad lengths given
//    to X_prelude (which then makes no handle).
//
//   run_prelude_host.sh DCCC CXX share_a.toy share_b.toy share_host.cpp
#include <cstdio>
#include <cstring>
#include <vector>

#include "share_a.h"
#include "share_b.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

struct Stats {
  uint64_t hits = 0, misses = 0;
};
Stats stats() {
  Stats s;
  dcc_prelude_cache_stats(dcc_default_prelude_cache(), &s.hits, &s.misses, nullptr);
  return s;
}
int64_t entries(const dcc_prelude* p) {
  int64_t n = -1;
  expect(dcc_prelude_stats(p, &n, nullptr) == DCC_OK, "dcc_prelude_stats");
  return n;
}

const int H = 2, D = 3;

struct Batch {
  std::vector<int32_t> lens;
  std::vector<float> x, out;
  int64_t total = 0;
  explicit Batch(std::vector<int32_t> l) : lens(std::move(l)) {
    for (int32_t v : lens) total += v;
    x.resize(total * H * D);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i % 17) - 1.f;
    out.assign(x.size(), 7.f);
  }
  TokA a() { return TokA{x.data(), (int64_t)x.size(), lens.data(), (int64_t)lens.size(), (int64_t)lens.size(), H, D}; }
  TokA a_out() { return TokA{out.data(), (int64_t)out.size(), nullptr, 0, 0, 0, 0}; }
  TokB b() { return TokB{x.data(), (int64_t)x.size(), lens.data(), (int64_t)lens.size(), (int64_t)lens.size(), H, D}; }
  TokB b_out() { return TokB{out.data(), (int64_t)out.size(), nullptr, 0, 0, 0, 0}; }
  bool is(float (*f)(float)) {
    for (size_t i = 0; i < x.size(); ++i)
      if (out[i] != f(x[i])) return false;
    return true;
  }
  bool untouched() {
    for (float v : out)
      if (v != 7.f) return false;
    return true;
  }
  void reset() { out.assign(x.size(), 7.f); }
};

float twice(float v) { return v * 2.f; }
float plus1(float v) { return v + 1.f; }
float neg(float v) { return 0.f - v; }

void simple_calls_share_the_cache() {
  Batch t({4, 0, 9, 2});
  Stats s0 = stats();
  TokA x = t.a(), o = t.a_out();
  expect(scale_a(&x, &o) == DCC_OK && t.is(twice), "scale_a");
  Stats s1 = stats();
  expect(s1.misses == s0.misses + 1 && s1.hits == s0.hits, "the first call computes the one offset array");
  t.reset();
  o = t.a_out();
  expect(shift_a(&x, &o) == DCC_OK && t.is(plus1), "shift_a");
  Stats s2 = stats();
  expect(s2.misses == s1.misses && s2.hits == s1.hits + 1, "another function of the library reuses it");
  t.reset();
  TokB y = t.b(), ob = t.b_out();
  expect(neg_b(&y, &ob) == DCC_OK && t.is(neg), "neg_b");
  Stats s3 = stats();
  expect(s3.misses == s2.misses && s3.hits == s2.hits + 1, "a function of another library reuses it");
}

void held_prelude() {
  Batch t({3, 5, 0, 1, 6});
  Stats s0 = stats();
  dcc_prelude* p = nullptr;
  TokA x = t.a();
  expect(scale_a_prelude(&x, &p) == DCC_OK && p != nullptr, "scale_a_prelude makes a handle");
  expect(entries(p) == 1, "one offset array");
  expect(shift_a_prelude(&x, &p) == DCC_OK && entries(p) == 1, "shift_a's arrays are scale_a's: shared");
  TokB y = t.b();
  expect(neg_b_prelude(&y, &p) == DCC_OK && entries(p) == 1, "neg_b's (another library) too");
  Stats s1 = stats();
  expect(s1.misses == s0.misses && s1.hits == s0.hits, "making a handle does not use the cache");

  // Every function runs with it, for lengths in other arrays too.
  for (int round = 0; round < 2; ++round) {
    std::vector<int32_t> copy = t.lens;
    TokA xa = t.a();
    if (round) xa.seqlen = copy.data();
    t.reset();
    TokA o = t.a_out();
    expect(scale_a_with_prelude(p, &xa, &o) == DCC_OK && t.is(twice), "scale_a_with_prelude");
    t.reset();
    o = t.a_out();
    expect(shift_a_with_prelude(p, &xa, &o) == DCC_OK && t.is(plus1), "shift_a_with_prelude");
    t.reset();
    TokB yb = t.b(), ob = t.b_out();
    if (round) yb.len = copy.data();
    expect(neg_b_with_prelude(p, &yb, &ob) == DCC_OK && t.is(neg), "neg_b_with_prelude");
  }
  Stats s2 = stats();
  expect(s2.misses == s1.misses && s2.hits == s1.hits, "calls with a handle do not use the cache");

  // Other lengths (same B and total), another size: a size mismatch.
  Batch u({3, 5, 1, 0, 6});
  TokA xu = u.a(), ou = u.a_out();
  expect(scale_a_with_prelude(p, &xu, &ou) == DCC_ERR_SIZE_MISMATCH && u.untouched(), "other lengths rejected");
  expect(std::strcmp(dcc_last_error(),
                     "scale_a_with_prelude: the prelude was made for other sizes or lengths than these arguments'") == 0,
         "the message says why");
  Batch v({3, 5, 0, 1, 6});
  TokA xv = v.a(), ov = v.a_out();
  xv.H = 1;
  xv.data_len = v.total * D;
  expect(scale_a_with_prelude(p, &xv, &ov) == DCC_ERR_SIZE_MISMATCH && v.untouched(), "another H rejected");
  // Adding the other pattern makes it work; the first still works.
  expect(scale_a_prelude(&xu, &p) == DCC_OK && entries(p) == 2, "a second pattern added");
  expect(scale_a_with_prelude(p, &xu, &ou) == DCC_OK && u.is(twice), "second pattern runs");
  t.reset();
  TokA o = t.a_out();
  expect(scale_a_with_prelude(p, &x, &o) == DCC_OK && t.is(twice), "first pattern still runs");

  // NULL handles, a handle without the function's arrays.
  t.reset();
  o = t.a_out();
  expect(scale_a_with_prelude(nullptr, &x, &o) == DCC_ERR_NULL_POINTER && t.untouched(), "NULL handle rejected");
  expect(std::strcmp(dcc_last_error(), "scale_a_with_prelude: `prelude` is NULL") == 0, "NULL handle message");
  expect(scale_a_prelude(&x, nullptr) == DCC_ERR_NULL_POINTER, "NULL handle pointer rejected");
  dcc_prelude* empty = dcc_prelude_create();
  expect(scale_a_with_prelude(empty, &x, &o) == DCC_ERR_INVALID_ARGUMENT && t.untouched(), "empty handle rejected");
  expect(std::strcmp(dcc_last_error(), "scale_a_with_prelude: the prelude holds no arrays for `scale_a` "
                                       "(add them with scale_a_prelude)") == 0,
         "empty handle message");
  dcc_prelude_destroy(empty);

  // Bad lengths: no handle made, an existing one unchanged.
  Batch bad({2, -1, 3});
  TokA xb = bad.a();
  xb.data_len = 0;
  dcc_prelude* none = nullptr;
  expect(scale_a_prelude(&xb, &none) == DCC_ERR_NEGATIVE_LENGTH && none == nullptr, "negative length: no handle");
  expect(scale_a_prelude(&xb, &p) == DCC_ERR_NEGATIVE_LENGTH && entries(p) == 2, "negative length: handle unchanged");
  TokA xs = t.a();
  xs.seqlen_len = 2;
  expect(scale_a_prelude(&xs, &p) == DCC_ERR_SIZE_MISMATCH && entries(p) == 2, "wrong seqlen_len rejected");

  // X_prelude reads only sizes and lengths: the data may be absent.
  TokA lens_only = t.a();
  lens_only.data = nullptr;
  lens_only.data_len = 0;
  dcc_prelude* q = nullptr;
  expect(scale_a_prelude(&lens_only, &q) == DCC_OK && entries(q) == 1, "a handle from the lengths alone");
  t.reset();
  o = t.a_out();
  expect(scale_a_with_prelude(q, &x, &o) == DCC_OK && t.is(twice), "and it runs");
  // ... but a call checks the data as always.
  t.reset();
  o = t.a_out();
  expect(scale_a_with_prelude(q, &lens_only, &o) == DCC_ERR_SIZE_MISMATCH && t.untouched(), "data still checked");
  dcc_prelude_destroy(q);
  dcc_prelude_destroy(p);
}

}  // namespace

int main() {
  simple_calls_share_the_cache();
  held_prelude();
  std::printf("%s\n", failures ? "prelude host check: FAILED" : "prelude host check: OK");
  return failures ? 1 : 0;
}
