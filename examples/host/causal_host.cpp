// Host program for examples/causal_attention.toy: causal scores stored
// without padding, `[b: B][i: seqlen[b]][i + 1, H]` (a triangular range
// inside a ragged one). Packs inputs and reads results with offsets it
// computes itself (sequence after sequence, row i holding (i + 1) * H
// values, docs/abi.md), checks all three functions against a float64
// reference (causal_reference.h, shared with causal_cuda_host.cu) on
// length patterns with zeros, and checks that bad arguments are rejected
// with a status and leave the output untouched.
//
//   dccc examples/causal_attention.toy -o causal.so
//   c++ -std=c++17 -I. causal_host.cpp ./causal.so -o causal_host && ./causal_host
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "causal.h"
#include "causal_reference.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

void run_case(std::mt19937& rng, const std::vector<int32_t>& lens, int H) {
  using namespace causal_ref;
  const int64_t B = int64_t(lens.size());
  const Layout L(lens, H);
  const int64_t total = L.total;
  std::vector<float> xs = uniform(rng, L.rows() * H, -1, 1);
  xs.push_back(0.f);  // never an empty vector: data() is not NULL
  std::vector<int32_t> seqlen(lens.begin(), lens.end());
  seqlen.push_back(0);
  Seqs x{xs.data(), L.rows() * H, seqlen.data(), B, B, H};
  bool ok = true;

  // causal_scores.
  Causal s{};
  expect(causal_scores_meta(&x, &s) == DCC_OK, "causal_scores_meta succeeds");
  expect(s.scores_len == total && s.seqlen == x.seqlen && s.B == B && s.H == H, "meta gives the triangular count");
  std::vector<float> sd(std::max<int64_t>(total, 1), NAN);
  s.scores = sd.data();
  expect(causal_scores(&x, &s) == DCC_OK, "causal_scores succeeds");
  ok &= matches(sd.data(), scores(lens, H, L, xs));

  // causal_softmax on random scores.
  std::vector<float> in = uniform(rng, total, -3, 3);
  in.push_back(0.f);
  Causal sin{in.data(), total, seqlen.data(), B, B, H}, p{};
  expect(causal_softmax_meta(&sin, &p) == DCC_OK && p.scores_len == total, "causal_softmax_meta");
  std::vector<float> pd(std::max<int64_t>(total, 1), NAN);
  p.scores = pd.data();
  expect(causal_softmax(&sin, &p) == DCC_OK, "causal_softmax succeeds");
  ok &= matches(pd.data(), softmax(lens, H, L, in));

  // causal_attention.
  Seqs y{};
  expect(causal_attention_meta(&x, &y) == DCC_OK && y.data_len == L.rows() * H, "causal_attention_meta");
  std::vector<float> yd(std::max<int64_t>(L.rows() * H, 1), NAN);
  y.data = yd.data();
  expect(causal_attention(&x, &y) == DCC_OK, "causal_attention succeeds");
  ok &= matches(yd.data(), attention(lens, H, L, xs));
  // The nested offsets come from the prelude cache, or from a prelude the
  // host holds: the same results.
  dcc_prelude* pre = nullptr;
  expect(causal_attention_prelude(&x, &pre) == DCC_OK && causal_scores_prelude(&x, &pre) == DCC_OK,
         "causal_attention_prelude and causal_scores_prelude succeed");
  std::vector<float> yd2(yd.size(), NAN), sd2(sd.size(), NAN);
  y.data = yd2.data();
  s.scores = sd2.data();
  expect(causal_attention_with_prelude(pre, &x, &y) == DCC_OK && causal_scores_with_prelude(pre, &x, &s) == DCC_OK,
         "the _with_prelude calls succeed");
  ok &= std::equal(yd.begin(), yd.begin() + L.rows() * H, yd2.begin()) &&
        std::equal(sd.begin(), sd.begin() + total, sd2.begin());
  // A handle held for other lengths: every offset of these functions is
  // nested, computed per call (docs/abi.md, "Nested raggedness": f_with_prelude
  // works with any handle), so it serves one more sequence of 3 -- the right
  // scores, not a refusal; a short result is still refused.
  std::vector<int32_t> other(lens.begin(), lens.end());
  other.push_back(3);
  const Layout L2(other, H);
  std::mt19937 other_rng(kSeed + 1);  // leaves rng, and so the next case's inputs, as before
  std::vector<float> xs2 = uniform(other_rng, L2.rows() * H, -1, 1);
  Seqs x2{xs2.data(), L2.rows() * H, other.data(), B + 1, B + 1, H};
  std::vector<float> o(L2.total, NAN);
  Causal s2{o.data(), L2.total, nullptr, 0, 0, 0};
  expect(causal_scores_with_prelude(pre, &x2, &s2) == DCC_OK && matches(o.data(), scores(other, H, L2, xs2)),
         "a handle held for other lengths gives the scores of the call's lengths");
  s2.scores_len = L2.total - 1;
  expect(causal_scores_with_prelude(pre, &x2, &s2) == DCC_ERR_SIZE_MISMATCH, "a short result is refused with a handle");
  dcc_prelude_destroy(pre);
  std::printf("B=%lld H=%d triangle=%lld: %s\n", (long long)B, H, (long long)total, ok ? "equal" : "DIFFERENT");
  expect(ok, "all three functions match the float64 reference");
}

void bad_arguments() {
  const int H = 2;
  std::vector<int32_t> lens{2, 3};
  std::vector<float> xs(5 * H, 1.f), o(9 * H, 7.f);
  Seqs x{xs.data(), 5 * H, lens.data(), 2, 2, H};
  Causal out{o.data(), 9 * H, nullptr, 0, 0, 0};
  auto untouched = [&] { return std::all_of(o.begin(), o.end(), [](float v) { return v == 7.f; }); };
  expect(causal_scores(&x, &out) == DCC_OK, "the valid call succeeds");
  std::fill(o.begin(), o.end(), 7.f);
  Causal keep = out;

  std::vector<int32_t> neg{2, -1};
  Seqs bad = x;
  bad.seqlen = neg.data();
  expect(causal_scores(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative length is rejected");
  bad = x;
  bad.data_len = 5 * H - 1;
  expect(causal_scores(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a wrong data_len is rejected");
  bad = x;
  bad.seqlen = nullptr;
  expect(causal_scores(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL length array is rejected");
  expect(causal_scores(nullptr, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL argument is rejected");
  out.scores_len = 9 * H - 1;
  expect(causal_scores(&x, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short result is rejected");
  out = keep;
  // A triangular input: its scores_len must be the triangle's count.
  Causal in{o.data(), 9 * H - 2, lens.data(), 2, 2, H};
  std::vector<float> r(9 * H, 5.f);
  Causal res{r.data(), 9 * H, nullptr, 0, 0, 0};
  expect(causal_softmax(&in, &res) == DCC_ERR_SIZE_MISMATCH &&
             std::all_of(r.begin(), r.end(), [](float v) { return v == 5.f; }),
         "a wrong triangular scores_len is rejected");
  // Offsets overflow: (i + 1) * H for H = 2^62.
  Seqs huge = x;
  huge.H = int64_t(1) << 62;
  expect(causal_scores_meta(&huge, &out) == DCC_ERR_OVERFLOW, "an offset overflow is rejected");
  Seqs neg_size = x;
  neg_size.H = -1;
  expect(causal_scores(&neg_size, &out) == DCC_ERR_INVALID_ARGUMENT && untouched(), "a negative size is rejected");
}

}  // namespace

int main() {
  std::mt19937 rng(causal_ref::kSeed);
  for (const auto& c : causal_ref::cases()) run_case(rng, c.first, c.second);
  bad_arguments();
  if (failures) {
    std::printf("%d failure(s)\n", failures);
    return 1;
  }
  std::printf("causal host check: OK\n");
  return 0;
}
