// A CUDA host of the library that `dccc --target=cuda` builds from
// examples/documents.toy (documents -> sentences -> tokens; `ntok` packed
// document after document): device buffers in, device buffers out -- the
// length arrays `nsent` and `ntok` too, which the C wrapper copies to the
// host to check them and to compute the nested offsets. Calls every
// function of the library (f, f_meta, f_prelude, f_with_prelude for
// sentence_sums, document_sums and sentence_softmax) on the batches of the
// CPU host, compares the results with the same float64 reference
// (documents_reference.h), then checks that bad arguments (negative lengths
// at both levels, wrong _len, NULL, overflow, with and without a held
// prelude) are refused with a status and leave the device output
// untouched, and that a prelude held for other lengths serves the call's
// lengths (the nested offsets are computed per call, docs/abi.md). Prints
// "documents cuda host check: OK" when everything holds.
//
//   dccc examples/documents.toy --target=cuda -o DIR/documents.so
//   nvcc -std=c++17 -o documents_cuda_host documents_cuda_host.cu -I DIR DIR/documents.so
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "documents.h"
#include "documents_reference.h"
#include "cuda_host_util.h"

using namespace cuda_host;

namespace {

void run_case(std::mt19937& rng, const documents_ref::DocLens& docs, int H) {
  using documents_ref::Batch;
  using documents_ref::matches;
  const Batch bt(docs);
  const int64_t D = bt.D(), S = bt.sentences(), n = bt.rows * H;
  const std::vector<float> tok = documents_ref::uniform(rng, n, -2, 2);
  float* d_tok = to_device(tok);
  int32_t* d_nsent = to_device(bt.nsent);
  int32_t* d_ntok = to_device(bt.ntok);
  Docs x{d_tok, n, d_ntok, S, d_nsent, D, D, H};
  bool ok = true;

  // sentence_sums: [d: D][nsent[d], H], sentence after sentence.
  Sentences ss{};
  expect(sentence_sums_meta(&x, &ss) == DCC_OK && ss.data_len == S * H && ss.nsent == d_nsent && ss.nsent_len == D,
         "sentence_sums_meta");
  float* d_ss = filled(S * H, NAN);
  ss.data = d_ss;
  expect(sentence_sums(&x, &ss) == DCC_OK, "sentence_sums succeeds");
  const std::vector<float> sd = to_host(d_ss, size_t(S * H));
  ok &= matches(sd.data(), documents_ref::sentence_sums(bt, H, tok));

  // document_sums: [D, H].
  document_sums_result_t ds{};
  expect(document_sums_meta(&x, &ds) == DCC_OK && ds.data_len == D * H, "document_sums_meta");
  float* d_ds = filled(D * H, NAN);
  ds.data = d_ds;
  expect(document_sums(&x, &ds) == DCC_OK, "document_sums succeeds");
  const std::vector<float> dd = to_host(d_ds, size_t(D * H));
  ok &= matches(dd.data(), documents_ref::document_sums(bt, H, tok));

  // sentence_softmax: per sentence and feature, over the tokens; the result
  // binds the device length arrays of x.
  Docs y{};
  expect(sentence_softmax_meta(&x, &y) == DCC_OK && y.tokens_len == n && y.ntok == d_ntok && y.ntok_len == S &&
             y.nsent == d_nsent && y.nsent_len == D,
         "sentence_softmax_meta binds the lengths");
  float* d_y = filled(n, NAN);
  y.tokens = d_y;
  expect(sentence_softmax(&x, &y) == DCC_OK, "sentence_softmax succeeds");
  const std::vector<float> yd = to_host(d_y, size_t(n));
  ok &= matches(yd.data(), documents_ref::sentence_softmax(bt, H, tok));

  // Every function again with a prelude the host holds (one handle for all
  // three): the same bits.
  dcc_prelude* pre = nullptr;
  expect(sentence_sums_prelude(&x, &pre) == DCC_OK && document_sums_prelude(&x, &pre) == DCC_OK &&
             sentence_softmax_prelude(&x, &pre) == DCC_OK,
         "sentence_sums_prelude, document_sums_prelude and sentence_softmax_prelude succeed");
  float *d_ss2 = filled(S * H, NAN), *d_ds2 = filled(D * H, NAN), *d_y2 = filled(n, NAN);
  Sentences ss2 = ss;
  document_sums_result_t ds2 = ds;
  Docs y2 = y;
  ss2.data = d_ss2;
  ds2.data = d_ds2;
  y2.tokens = d_y2;
  expect(sentence_sums_with_prelude(pre, &x, &ss2) == DCC_OK && document_sums_with_prelude(pre, &x, &ds2) == DCC_OK &&
             sentence_softmax_with_prelude(pre, &x, &y2) == DCC_OK,
         "the _with_prelude calls succeed");
  ok &= to_host(d_ss2, size_t(S * H)) == sd && to_host(d_ds2, size_t(D * H)) == dd && to_host(d_y2, size_t(n)) == yd;

  // A handle held for other lengths (one more document of sentences of 2
  // and 3 tokens): the offsets of these functions are nested, computed per
  // call from the call's lengths (docs/abi.md, "Nested raggedness":
  // f_with_prelude works with any handle) -- the right sums, not stale offsets.
  documents_ref::DocLens docs2 = docs;
  docs2.push_back({2, 3});
  const Batch bt2(docs2);
  std::mt19937 other_rng(documents_ref::kSeed + 1);  // leaves rng, and so the next case's inputs, as the CPU host's
  const std::vector<float> tok2 = documents_ref::uniform(other_rng, bt2.rows * H, -2, 2);
  int32_t *d_nsent2 = to_device(bt2.nsent), *d_ntok2 = to_device(bt2.ntok);
  float* d_tok2 = to_device(tok2);
  Docs x2{d_tok2, bt2.rows * H, d_ntok2, bt2.sentences(), d_nsent2, D + 1, D + 1, H};
  float* d_o = filled((D + 1) * H, NAN);
  document_sums_result_t o{d_o, (D + 1) * H, D + 1, H};
  expect(document_sums_with_prelude(pre, &x2, &o) == DCC_OK &&
             matches(to_host(d_o, size_t((D + 1) * H)).data(), documents_ref::document_sums(bt2, H, tok2)),
         "a handle held for other lengths gives the sums of the call's lengths");
  // Refused with a handle: a NULL handle, a short result; the output untouched.
  const std::vector<float> before = to_host(d_o, size_t((D + 1) * H));
  expect(document_sums_with_prelude(nullptr, &x2, &o) == DCC_ERR_NULL_POINTER, "a NULL handle is refused");
  o.data_len = (D + 1) * H - 1;
  expect(document_sums_with_prelude(pre, &x2, &o) == DCC_ERR_SIZE_MISMATCH, "a short result is refused with a handle");
  expect(to_host(d_o, size_t((D + 1) * H)) == before, "the refused _with_prelude calls leave the output untouched");
  dcc_prelude_destroy(pre);
  for (void* q : {(void*)d_tok, (void*)d_nsent, (void*)d_ntok, (void*)d_ss, (void*)d_ds, (void*)d_y, (void*)d_ss2,
                  (void*)d_ds2, (void*)d_y2, (void*)d_nsent2, (void*)d_ntok2, (void*)d_tok2, (void*)d_o})
    cudaFree(q);
  std::printf("D=%lld H=%d sentences=%lld tokens=%lld: %s\n", (long long)D, H, (long long)S, (long long)bt.rows,
              ok ? "equal" : "DIFFERENT");
  expect(ok, "all functions match the float64 reference");
}

void bad_arguments() {
  const int H = 2;
  // nsent = [2, 1], ntok = [3, 0 | 2]: 5 token rows.
  float* d_tok = filled(5 * H, 1.f);
  int32_t* d_nsent = to_device(std::vector<int32_t>{2, 1});
  int32_t* d_ntok = to_device(std::vector<int32_t>{3, 0, 2});
  float* d_o = filled(5 * H, 7.f);
  Docs x{d_tok, 5 * H, d_ntok, 3, d_nsent, 2, 2, H};
  Docs out{d_o, 5 * H, nullptr, 0, nullptr, 0, 0, 0};
  auto reset = [&] { cuda_ok(cudaMemcpy(d_o, std::vector<float>(5 * H, 7.f).data(), 5 * H * sizeof(float),
                                        cudaMemcpyHostToDevice), "reset"); };
  auto untouched = [&] {
    const std::vector<float> o = to_host(d_o, 5 * H);
    return std::all_of(o.begin(), o.end(), [](float v) { return v == 7.f; });
  };
  expect(sentence_softmax(&x, &out) == DCC_OK, "the valid call succeeds");
  expect(!untouched(), "the valid call writes the output");
  reset();
  Docs keep = out;

  // Negative lengths at both levels, in device memory: the wrapper's host
  // copies see them.
  int32_t* d_neg_tok = to_device(std::vector<int32_t>{3, -1, 2});
  Docs bad = x;
  bad.ntok = d_neg_tok;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative token count is rejected");
  Sentences sbad{};
  expect(sentence_sums_meta(&bad, &sbad) == DCC_ERR_NEGATIVE_LENGTH, "sentence_sums_meta rejects a negative token count");
  int32_t* d_neg_sent = to_device(std::vector<int32_t>{2, -1});
  bad = x;
  bad.nsent = d_neg_sent;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative sentence count is rejected");
  bad = x;
  bad.nsent_len = 1;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short nsent_len is rejected");
  bad = x;
  bad.ntok_len = 2;  // the sentence counts give 3
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short ntok_len is rejected");
  bad.ntok_len = 4;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a long ntok_len is rejected");
  bad = x;
  bad.ntok = nullptr;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL ntok is rejected");
  bad = x;
  bad.nsent = nullptr;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL nsent is rejected");
  bad = x;
  bad.tokens = nullptr;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL tokens pointer is rejected");
  expect(sentence_softmax(nullptr, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL argument is rejected");
  expect(sentence_softmax(&x, nullptr) == DCC_ERR_NULL_POINTER && untouched(), "a NULL result is rejected");
  bad = x;
  bad.tokens_len = 5 * H + 1;
  expect(sentence_softmax(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a wrong tokens_len is rejected");
  out.tokens_len = 5 * H - 1;
  expect(sentence_softmax(&x, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short result is rejected");
  out = keep;
  out.tokens = nullptr;
  expect(sentence_softmax(&x, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL result pointer is rejected");
  out = keep;
  // ntok * H overflows for H = 2^62.
  Docs huge = x;
  huge.H = int64_t(1) << 62;
  expect(sentence_softmax_meta(&huge, &out) == DCC_ERR_OVERFLOW, "an offset overflow is rejected");
  Docs neg_size = x;
  neg_size.H = -1;
  expect(sentence_softmax(&neg_size, &out) == DCC_ERR_INVALID_ARGUMENT && untouched(), "a negative size is rejected");
  // The held prelude checks the nested lengths too, and makes no handle.
  dcc_prelude* pre = nullptr;
  bad = x;
  bad.ntok = d_neg_tok;
  expect(document_sums_prelude(&bad, &pre) == DCC_ERR_NEGATIVE_LENGTH && pre == nullptr,
         "document_sums_prelude rejects a negative token count");
  bad = x;
  bad.ntok_len = 2;
  expect(document_sums_prelude(&bad, &pre) == DCC_ERR_SIZE_MISMATCH && pre == nullptr,
         "document_sums_prelude rejects a wrong ntok_len");
  // A handle held for other token counts (same sentence counts) serves the
  // call's counts: all tokens 1, so each softmax is 1 / ntok of its sentence.
  expect(sentence_softmax_prelude(&x, &pre) == DCC_OK, "sentence_softmax_prelude succeeds");
  int32_t* d_ntok_other = to_device(std::vector<int32_t>{1, 2, 2});  // still 5 token rows
  bad = x;
  bad.ntok = d_ntok_other;
  expect(sentence_softmax_with_prelude(pre, &bad, &out) == DCC_OK &&
             documents_ref::matches(to_host(d_o, 5 * H).data(),
                                    documents_ref::sentence_softmax(documents_ref::Batch({{1, 2}, {2}}), H,
                                                                    std::vector<float>(5 * H, 1.f))),
         "a handle held for other token counts gives the softmax of the call's counts");
  reset();
  bad.ntok = d_neg_tok;
  expect(sentence_softmax_with_prelude(pre, &bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(),
         "sentence_softmax_with_prelude rejects a negative token count");
  dcc_prelude_destroy(pre);
  for (void* q : {(void*)d_tok, (void*)d_nsent, (void*)d_ntok, (void*)d_o, (void*)d_neg_tok, (void*)d_neg_sent,
                  (void*)d_ntok_other})
    cudaFree(q);
}

}  // namespace

int main() {
  std::mt19937 rng(documents_ref::kSeed);
  for (const auto& c : documents_ref::cases()) run_case(rng, c.first, c.second);
  bad_arguments();
  if (failures) {
    std::printf("documents cuda host check: %d failure(s)\n", failures);
    return 1;
  }
  std::printf("documents cuda host check: OK\n");
  return 0;
}
