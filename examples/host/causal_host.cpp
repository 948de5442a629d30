// Host program for examples/causal_attention.toy: causal scores stored
// without padding, `[b: B][i: seqlen[b]][i + 1, H]` (a triangular range
// inside a ragged one). Packs inputs and reads results with offsets it
// computes itself (sequence after sequence, row i holding (i + 1) * H
// values, docs/abi.md), checks all three functions against a float64
// reference computed here, on length patterns with zeros, and checks that
// bad arguments are rejected with a status and leave the output untouched.
//
//   dccc examples/causal_attention.toy -o causal.so
//   c++ -std=c++17 -I. causal_host.cpp ./causal.so -o causal_host && ./causal_host
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "causal.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

bool close(double got, double want) { return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)); }

/// Row offsets of the triangular layout: tri[b][i] is where row (b, i)
/// starts, in elements; the total is the last entry.
std::vector<std::vector<int64_t>> triangle(const std::vector<int32_t>& lens, int H, int64_t& total) {
  std::vector<std::vector<int64_t>> tri(lens.size());
  total = 0;
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i) {
      tri[b].push_back(total);
      total += int64_t(i + 1) * H;
    }
  return tri;
}

void run_case(std::mt19937& rng, const std::vector<int32_t>& lens, int H) {
  const int64_t B = int64_t(lens.size());
  std::vector<int64_t> start(lens.size() + 1, 0);  // token rows before b
  for (size_t b = 0; b < lens.size(); ++b) start[b + 1] = start[b] + lens[b];
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(std::max<int64_t>(start[B] * H, 1));
  for (auto& v : xs) v = u(rng);
  auto X = [&](size_t b, int i, int h) { return double(xs[(start[b] + i) * H + h]); };
  std::vector<int32_t> seqlen(lens.begin(), lens.end());
  seqlen.push_back(0);
  Seqs x{xs.data(), start[B] * H, seqlen.data(), B, B, H};
  int64_t total = 0;
  auto tri = triangle(lens, H, total);
  bool ok = true;

  // causal_scores: s[b][i][j, h] = x[b][i, h] * x[b][j, h].
  Causal s{};
  expect(causal_scores_meta(&x, &s) == DCC_OK, "causal_scores_meta succeeds");
  expect(s.scores_len == total && s.seqlen == x.seqlen && s.B == B && s.H == H, "meta gives the triangular count");
  std::vector<float> sd(std::max<int64_t>(total, 1), NAN);
  s.scores = sd.data();
  expect(causal_scores(&x, &s) == DCC_OK, "causal_scores succeeds");
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i)
      for (int j = 0; j <= i; ++j)
        for (int h = 0; h < H; ++h) ok &= close(sd[tri[b][i] + j * H + h], X(b, i, h) * X(b, j, h));

  // causal_softmax on random scores: p = exp(s - max_j s) / sum_j exp(s - max_j s).
  std::vector<float> in(std::max<int64_t>(total, 1));
  for (auto& v : in) v = 3 * u(rng);
  Causal sin{in.data(), total, seqlen.data(), B, B, H}, p{};
  expect(causal_softmax_meta(&sin, &p) == DCC_OK && p.scores_len == total, "causal_softmax_meta");
  std::vector<float> pd(std::max<int64_t>(total, 1), NAN);
  p.scores = pd.data();
  expect(causal_softmax(&sin, &p) == DCC_OK, "causal_softmax succeeds");
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i)
      for (int h = 0; h < H; ++h) {
        auto at = [&](int j) { return tri[b][i] + j * H + h; };
        double m = -INFINITY, z = 0;
        for (int j = 0; j <= i; ++j) m = std::max(m, double(in[at(j)]));
        for (int j = 0; j <= i; ++j) z += std::exp(in[at(j)] - m);
        for (int j = 0; j <= i; ++j) ok &= close(pd[at(j)], std::exp(in[at(j)] - m) / z);
      }

  // causal_attention: y[b][i, h] = sum_{j <= i} e_j x[b][j, h] / sum_{j <= i} e_j,
  // e_j = exp(x_i x_j - max_{k <= i} x_i x_k).
  Seqs y{};
  expect(causal_attention_meta(&x, &y) == DCC_OK && y.data_len == start[B] * H, "causal_attention_meta");
  std::vector<float> yd(std::max<int64_t>(start[B] * H, 1), NAN);
  y.data = yd.data();
  expect(causal_attention(&x, &y) == DCC_OK, "causal_attention succeeds");
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i)
      for (int h = 0; h < H; ++h) {
        double m = -INFINITY, num = 0, den = 0;
        for (int j = 0; j <= i; ++j) m = std::max(m, X(b, i, h) * X(b, j, h));
        for (int j = 0; j <= i; ++j) {
          double e = std::exp(X(b, i, h) * X(b, j, h) - m);
          num += e * X(b, j, h);
          den += e;
        }
        ok &= close(yd[(start[b] + i) * H + h], num / den);
      }
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
  ok &= std::equal(yd.begin(), yd.begin() + start[B] * H, yd2.begin()) &&
        std::equal(sd.begin(), sd.begin() + total, sd2.begin());
  std::vector<int32_t> other(lens.begin(), lens.end());
  other.push_back(1);
  std::vector<float> xs2((start[B] + 1) * H, 0.f);
  Seqs x2{xs2.data(), (start[B] + 1) * H, other.data(), B + 1, B + 1, H};
  expect(causal_scores_with_prelude(pre, &x2, &s) == DCC_ERR_SIZE_MISMATCH,
         "a held prelude for other lengths is refused");
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
  std::mt19937 rng(7);
  run_case(rng, {3, 0, 5, 1}, 2);
  run_case(rng, {0}, 3);
  run_case(rng, {}, 2);
  run_case(rng, {7, 1, 0, 0, 4}, 1);
  run_case(rng, {12}, 4);
  bad_arguments();
  if (failures) {
    std::printf("%d failure(s)\n", failures);
    return 1;
  }
  std::printf("causal host check: OK\n");
  return 0;
}
