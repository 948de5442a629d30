// The float64 reference and the batches of examples/documents.toy, shared
// by its CPU host (documents_host.cpp) and its CUDA host
// (documents_cuda_host.cu), so that both check the library against the
// same numbers. Independent of dccc: every offset is counted here from the
// lengths (docs/abi.md, "Nested raggedness"). No generated header needed.
#ifndef DCCC_EXAMPLES_DOCUMENTS_REFERENCE_H
#define DCCC_EXAMPLES_DOCUMENTS_REFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace documents_ref {

/// The batches (per document, the token count of each sentence: empty
/// documents, empty sentences, no document at all) and their H; the random
/// inputs come from kSeed.
using DocLens = std::vector<std::vector<int32_t>>;
inline const std::vector<std::pair<DocLens, int>>& cases() {
  static const std::vector<std::pair<DocLens, int>> c = {
      {{{3, 0}, {}, {2}, {1, 4, 0}}, 2}, {{{0}}, 3}, {{}, 2}, {{{}, {}}, 1}, {{{5, 1, 7}, {9}}, 4}};
  return c;
}
constexpr unsigned kSeed = 11;

/// The tolerance of every comparison with the reference.
inline bool close(double got, double want) { return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)); }

/// One batch: per document, the token count of each sentence.
struct Batch {
  std::vector<int32_t> nsent, ntok;   // ntok packed: document after document
  std::vector<int64_t> first_sent;    // index in ntok of document d's first sentence
  std::vector<int64_t> sent_start;    // token row where sentence (packed index) starts
  int64_t rows = 0;                   // token rows in all
  explicit Batch(const DocLens& docs) {
    for (const auto& d : docs) {
      first_sent.push_back(int64_t(ntok.size()));
      nsent.push_back(int32_t(d.size()));
      for (int32_t n : d) {
        sent_start.push_back(rows);
        ntok.push_back(n);
        rows += n;
      }
    }
    first_sent.push_back(int64_t(ntok.size()));
  }
  int64_t D() const { return int64_t(nsent.size()); }
  int64_t sentences() const { return int64_t(ntok.size()); }
};

/// n uniform floats in [lo, hi).
inline std::vector<float> uniform(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
  for (auto& f : v) f = u(rng);
  return v;
}

/// sentence_sums: [d: D][nsent[d], H], by packed sentence index.
inline std::vector<double> sentence_sums(const Batch& bt, int H, const std::vector<float>& tok) {
  std::vector<double> sums(size_t(bt.sentences() * H), 0.0);
  for (int64_t k = 0; k < bt.sentences(); ++k)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < bt.ntok[k]; ++t) sums[k * H + h] += tok[(bt.sent_start[k] + t) * H + h];
  return sums;
}

/// document_sums: [D, H], the sum over each document's sentences.
inline std::vector<double> document_sums(const Batch& bt, int H, const std::vector<float>& tok) {
  std::vector<double> sums = sentence_sums(bt, H, tok), docs(size_t(bt.D() * H), 0.0);
  for (int64_t d = 0; d < bt.D(); ++d)
    for (int h = 0; h < H; ++h)
      for (int64_t k = bt.first_sent[d]; k < bt.first_sent[d + 1]; ++k) docs[d * H + h] += sums[k * H + h];
  return docs;
}

/// sentence_softmax: per sentence and feature, over the tokens; packed like tok.
inline std::vector<double> sentence_softmax(const Batch& bt, int H, const std::vector<float>& tok) {
  std::vector<double> y(size_t(bt.rows * H));
  for (int64_t k = 0; k < bt.sentences(); ++k)
    for (int h = 0; h < H; ++h) {
      auto T = [&](int t) { return double(tok[(bt.sent_start[k] + t) * H + h]); };
      double m = -INFINITY, z = 0;
      for (int t = 0; t < bt.ntok[k]; ++t) m = std::max(m, T(t));
      for (int t = 0; t < bt.ntok[k]; ++t) z += std::exp(T(t) - m);
      for (int t = 0; t < bt.ntok[k]; ++t) y[(bt.sent_start[k] + t) * H + h] = std::exp(T(t) - m) / z;
    }
  return y;
}

/// Whether got[k] is close to want[k] for every k of want.
inline bool matches(const float* got, const std::vector<double>& want) {
  bool ok = true;
  for (size_t k = 0; k < want.size(); ++k) ok &= close(got[k], want[k]);
  return ok;
}

}  // namespace documents_ref

#endif
