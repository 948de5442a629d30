// Host program for examples/documents.toy: two levels of raggedness,
// documents -> sentences -> tokens. The host passes `nsent` (one length per
// document), `ntok` (one length per sentence, packed document after
// document: ntok_len = sum of nsent) and the tokens packed document after
// document, sentence after sentence, each sentence [ntok, H] row-major
// (docs/abi.md, "Nested raggedness"); every offset is computed here. All
// three functions are checked against a float64 reference
// (documents_reference.h, shared with documents_cuda_host.cu),
// on patterns with empty documents and empty sentences; bad arguments
// (negative lengths at either level, wrong _len, NULL, overflow) are
// rejected with a status and leave the output untouched.
//
//   dccc examples/documents.toy -o docs.so
//   c++ -std=c++17 -I. documents_host.cpp ./docs.so -o docs_host && ./docs_host
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "docs.h"
#include "documents_reference.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

void run_case(std::mt19937& rng, const documents_ref::DocLens& docs, int H) {
  using namespace documents_ref;
  const Batch bt(docs);
  const int64_t D = bt.D();
  std::vector<float> tok = uniform(rng, bt.rows * H, -2, 2);
  tok.push_back(0.f);  // never an empty vector: data() is not NULL
  std::vector<int32_t> nsent = bt.nsent, ntok = bt.ntok;
  nsent.push_back(0);
  ntok.push_back(0);
  Docs x{tok.data(), bt.rows * H, ntok.data(), bt.sentences(), nsent.data(), D, D, H};
  bool ok = true;

  // sentence_sums: [d: D][nsent[d], H], sentence after sentence.
  Sentences ss{};
  expect(sentence_sums_meta(&x, &ss) == DCC_OK && ss.data_len == bt.sentences() * H && ss.nsent == x.nsent,
         "sentence_sums_meta");
  std::vector<float> sd(std::max<int64_t>(ss.data_len, 1), NAN);
  ss.data = sd.data();
  expect(sentence_sums(&x, &ss) == DCC_OK, "sentence_sums succeeds");
  ok &= matches(sd.data(), documents_ref::sentence_sums(bt, H, tok));

  // document_sums: [D, H].
  document_sums_result_t ds{};
  expect(document_sums_meta(&x, &ds) == DCC_OK && ds.data_len == D * H, "document_sums_meta");
  std::vector<float> dd(std::max<int64_t>(D * H, 1), NAN);
  ds.data = dd.data();
  expect(document_sums(&x, &ds) == DCC_OK, "document_sums succeeds");
  ok &= matches(dd.data(), documents_ref::document_sums(bt, H, tok));

  // sentence_softmax: per sentence and feature, over the tokens.
  Docs y{};
  expect(sentence_softmax_meta(&x, &y) == DCC_OK && y.tokens_len == bt.rows * H && y.ntok == x.ntok &&
             y.ntok_len == x.ntok_len && y.nsent == x.nsent,
         "sentence_softmax_meta binds the lengths");
  std::vector<float> yd(std::max<int64_t>(bt.rows * H, 1), NAN);
  y.tokens = yd.data();
  expect(sentence_softmax(&x, &y) == DCC_OK, "sentence_softmax succeeds");
  ok &= matches(yd.data(), documents_ref::sentence_softmax(bt, H, tok));

  // A prelude held by the host gives the same sums.
  dcc_prelude* pre = nullptr;
  expect(document_sums_prelude(&x, &pre) == DCC_OK, "document_sums_prelude succeeds");
  std::vector<float> dd2(dd.size(), NAN);
  ds.data = dd2.data();
  expect(document_sums_with_prelude(pre, &x, &ds) == DCC_OK, "document_sums_with_prelude succeeds");
  ok &= std::equal(dd.begin(), dd.begin() + D * H, dd2.begin());
  dcc_prelude_destroy(pre);
  std::printf("D=%lld H=%d sentences=%lld tokens=%lld: %s\n", (long long)D, H, (long long)bt.sentences(),
              (long long)bt.rows, ok ? "equal" : "DIFFERENT");
  expect(ok, "all three functions match the float64 reference");
}

void bad_arguments() {
  const int H = 2;
  // nsent = [2, 1], ntok = [3, 0 | 2]: 5 token rows.
  std::vector<int32_t> nsent{2, 1}, ntok{3, 0, 2};
  std::vector<float> tok(5 * H, 1.f), o(5 * H, 7.f);
  Docs x{tok.data(), 5 * H, ntok.data(), 3, nsent.data(), 2, 2, H};
  Docs out{o.data(), 5 * H, nullptr, 0, nullptr, 0, 0, 0};
  auto untouched = [&] { return std::all_of(o.begin(), o.end(), [](float v) { return v == 7.f; }); };
  expect(sentence_softmax(&x, &out) == DCC_OK, "the valid call succeeds");
  std::fill(o.begin(), o.end(), 7.f);
  Docs keep = out;

  std::vector<int32_t> neg_tok{3, -1, 2};
  Docs bad = x;
  bad.ntok = neg_tok.data();
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative token count is rejected");
  std::vector<int32_t> neg_sent{2, -1};
  bad = x;
  bad.nsent = neg_sent.data();
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative sentence count is rejected");
  bad = x;
  bad.ntok_len = 2;  // the sentence counts give 3
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short ntok_len is rejected");
  bad.ntok_len = 4;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a long ntok_len is rejected");
  bad = x;
  bad.ntok = nullptr;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL ntok is rejected");
  bad = x;
  bad.tokens_len = 5 * H + 1;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a wrong tokens_len is rejected");
  out.tokens_len = 5 * H - 1;
  expect(sentence_softmax(&x, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short result is rejected");
  out = keep;
  // ntok * H overflows for H = 2^62.
  Docs huge = x;
  huge.H = int64_t(1) << 62;
  expect(sentence_softmax_meta(&huge, &out) == DCC_ERR_OVERFLOW, "an offset overflow is rejected");
  // The held prelude checks the nested lengths too.
  dcc_prelude* pre = nullptr;
  bad = x;
  bad.ntok = neg_tok.data();
  expect(document_sums_prelude(&bad, &pre) == DCC_ERR_NEGATIVE_LENGTH && pre == nullptr,
         "document_sums_prelude rejects a negative token count");
  bad = x;
  bad.ntok_len = 2;
  expect(document_sums_prelude(&bad, &pre) == DCC_ERR_SIZE_MISMATCH && pre == nullptr,
         "document_sums_prelude rejects a wrong ntok_len");
}

}  // namespace

int main() {
  std::mt19937 rng(documents_ref::kSeed);
  for (const auto& c : documents_ref::cases()) run_case(rng, c.first, c.second);
  bad_arguments();
  if (failures) {
    std::printf("%d failure(s)\n", failures);
    return 1;
  }
  std::printf("documents host check: OK\n");
  return 0;
}
