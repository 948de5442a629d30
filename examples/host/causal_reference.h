// The float64 reference and the length patterns of examples/causal_attention.toy,
// shared by its CPU host (causal_host.cpp) and its CUDA host
// (causal_cuda_host.cu), so that both check the library against the same
// numbers. Independent of dccc: every offset is counted here from the
// lengths (docs/abi.md, "Nested raggedness"). No generated header needed.
#ifndef DCCC_EXAMPLES_CAUSAL_REFERENCE_H
#define DCCC_EXAMPLES_CAUSAL_REFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace causal_ref {

/// The length patterns (with empty sequences, no sequence at all, and one
/// long one) and their H; the random inputs come from kSeed.
inline const std::vector<std::pair<std::vector<int32_t>, int>>& cases() {
  static const std::vector<std::pair<std::vector<int32_t>, int>> c = {
      {{3, 0, 5, 1}, 2}, {{0}, 3}, {{}, 2}, {{7, 1, 0, 0, 4}, 1}, {{12}, 4}};
  return c;
}
constexpr unsigned kSeed = 7;

/// The tolerance of every comparison with the reference.
inline bool close(double got, double want) { return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)); }

/// Both layouts of one length pattern: `start[b]` is the first token row of
/// sequence b (start[B] rows in all), `tri[b][i]` the first element of
/// score row (b, i) in the triangular layout, `total` its element count.
struct Layout {
  std::vector<int64_t> start;
  std::vector<std::vector<int64_t>> tri;
  int64_t total = 0;
  Layout(const std::vector<int32_t>& lens, int H) : start(lens.size() + 1, 0), tri(lens.size()) {
    for (size_t b = 0; b < lens.size(); ++b) start[b + 1] = start[b] + lens[b];
    for (size_t b = 0; b < lens.size(); ++b)
      for (int i = 0; i < lens[b]; ++i) {
        tri[b].push_back(total);
        total += int64_t(i + 1) * H;
      }
  }
  int64_t rows() const { return start.back(); }
};

/// n uniform floats in [lo, hi).
inline std::vector<float> uniform(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
  for (auto& f : v) f = u(rng);
  return v;
}

/// causal_scores: s[b][i][j, h] = x[b][i, h] * x[b][j, h], triangular layout.
inline std::vector<double> scores(const std::vector<int32_t>& lens, int H, const Layout& L, const std::vector<float>& x) {
  std::vector<double> s(size_t(L.total));
  auto X = [&](size_t b, int i, int h) { return double(x[(L.start[b] + i) * H + h]); };
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i)
      for (int j = 0; j <= i; ++j)
        for (int h = 0; h < H; ++h) s[L.tri[b][i] + j * H + h] = X(b, i, h) * X(b, j, h);
  return s;
}

/// causal_softmax: p = exp(s - max_j s) / sum_j exp(s - max_j s) over each row's j <= i.
inline std::vector<double> softmax(const std::vector<int32_t>& lens, int H, const Layout& L, const std::vector<float>& in) {
  std::vector<double> p(size_t(L.total));
  for (size_t b = 0; b < lens.size(); ++b)
    for (int i = 0; i < lens[b]; ++i)
      for (int h = 0; h < H; ++h) {
        auto at = [&](int j) { return L.tri[b][i] + j * H + h; };
        double m = -INFINITY, z = 0;
        for (int j = 0; j <= i; ++j) m = std::max(m, double(in[at(j)]));
        for (int j = 0; j <= i; ++j) z += std::exp(in[at(j)] - m);
        for (int j = 0; j <= i; ++j) p[at(j)] = std::exp(in[at(j)] - m) / z;
      }
  return p;
}

/// causal_attention: y[b][i, h] = sum_{j <= i} e_j x[b][j, h] / sum_{j <= i} e_j,
/// e_j = exp(x_i x_j - max_{k <= i} x_i x_k); packed like x.
inline std::vector<double> attention(const std::vector<int32_t>& lens, int H, const Layout& L, const std::vector<float>& x) {
  std::vector<double> y(size_t(L.rows() * H));
  auto X = [&](size_t b, int i, int h) { return double(x[(L.start[b] + i) * H + h]); };
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
        y[(L.start[b] + i) * H + h] = num / den;
      }
  return y;
}

/// Whether got[k] is close to want[k] for every k of want.
inline bool matches(const float* got, const std::vector<double>& want) {
  bool ok = true;
  for (size_t k = 0; k < want.size(); ++k) ok &= close(got[k], want[k]);
  return ok;
}

}  // namespace causal_ref

#endif
