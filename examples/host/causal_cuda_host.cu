// A CUDA host of the library that `dccc --target=cuda` builds from
// examples/causal_attention.toy (causal scores stored without padding,
// `[b: B][i: seqlen[b]][i + 1, H]`): device buffers in, device buffers out.
// Calls every function of the library (f, f_meta, f_prelude,
// f_with_prelude for causal_scores, causal_softmax and causal_attention) on
// the length patterns of the CPU host, compares the results with the same
// float64 reference (causal_reference.h), then checks that bad arguments
// -- read by the C wrapper from its host copy of the device length array --
// are refused with a status and leave the device output untouched, and that
// a prelude held for other lengths serves the call's lengths (the nested
// offsets are computed per call, docs/abi.md). Prints
// "causal cuda host check: OK" when everything holds.
//
//   dccc examples/causal_attention.toy --target=cuda -o DIR/causal_attention.so
//   nvcc -std=c++17 -o causal_cuda_host causal_cuda_host.cu -I DIR DIR/causal_attention.so
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "causal_attention.h"
#include "causal_reference.h"
#include "cuda_host_util.h"

using namespace cuda_host;

namespace {

void run_case(std::mt19937& rng, const std::vector<int32_t>& lens, int H) {
  using namespace causal_ref;
  const int64_t B = int64_t(lens.size());
  const Layout L(lens, H);
  const int64_t total = L.total, n = L.rows() * H;
  const std::vector<float> xs = uniform(rng, n, -1, 1);
  float* d_x = to_device(xs);
  int32_t* d_len = to_device(lens);
  Seqs x{d_x, n, d_len, B, B, H};
  bool ok = true;

  // causal_scores: meta, then the call into a NaN-filled device buffer.
  Causal s{};
  expect(causal_scores_meta(&x, &s) == DCC_OK, "causal_scores_meta succeeds");
  expect(s.scores_len == total && s.seqlen == d_len && s.seqlen_len == B && s.B == B && s.H == H,
         "causal_scores_meta gives the triangular count and binds the device seqlen");
  float* d_s = filled(total, NAN);
  s.scores = d_s;
  expect(causal_scores(&x, &s) == DCC_OK, "causal_scores succeeds");
  const std::vector<float> sd = to_host(d_s, size_t(total));
  ok &= matches(sd.data(), scores(lens, H, L, xs));

  // causal_softmax on random scores.
  const std::vector<float> in = uniform(rng, total, -3, 3);
  float* d_in = to_device(in);
  Causal sin{d_in, total, d_len, B, B, H}, p{};
  expect(causal_softmax_meta(&sin, &p) == DCC_OK && p.scores_len == total && p.seqlen == d_len,
         "causal_softmax_meta");
  float* d_p = filled(total, NAN);
  p.scores = d_p;
  expect(causal_softmax(&sin, &p) == DCC_OK, "causal_softmax succeeds");
  const std::vector<float> pd = to_host(d_p, size_t(total));
  ok &= matches(pd.data(), softmax(lens, H, L, in));

  // causal_attention.
  Seqs y{};
  expect(causal_attention_meta(&x, &y) == DCC_OK && y.data_len == n && y.seqlen == d_len, "causal_attention_meta");
  float* d_y = filled(n, NAN);
  y.data = d_y;
  expect(causal_attention(&x, &y) == DCC_OK, "causal_attention succeeds");
  const std::vector<float> yd = to_host(d_y, size_t(n));
  ok &= matches(yd.data(), attention(lens, H, L, xs));

  // Every function again with a prelude the host holds (one handle for all
  // three): the same bits.
  dcc_prelude* pre = nullptr;
  expect(causal_scores_prelude(&x, &pre) == DCC_OK && causal_softmax_prelude(&sin, &pre) == DCC_OK &&
             causal_attention_prelude(&x, &pre) == DCC_OK,
         "causal_scores_prelude, causal_softmax_prelude and causal_attention_prelude succeed");
  float *d_s2 = filled(total, NAN), *d_p2 = filled(total, NAN), *d_y2 = filled(n, NAN);
  Causal s2 = s, p2 = p;
  Seqs y2 = y;
  s2.scores = d_s2;
  p2.scores = d_p2;
  y2.data = d_y2;
  expect(causal_scores_with_prelude(pre, &x, &s2) == DCC_OK && causal_softmax_with_prelude(pre, &sin, &p2) == DCC_OK &&
             causal_attention_with_prelude(pre, &x, &y2) == DCC_OK,
         "the _with_prelude calls succeed");
  ok &= to_host(d_s2, size_t(total)) == sd && to_host(d_p2, size_t(total)) == pd && to_host(d_y2, size_t(n)) == yd;

  // A handle held for other lengths: every offset of these functions is
  // nested, computed per call from the call's lengths (docs/abi.md, "Nested
  // raggedness": f_with_prelude works with any handle), so it serves one
  // more sequence of 3 just as well -- the right results, not stale offsets.
  std::vector<int32_t> other(lens.begin(), lens.end());
  other.push_back(3);
  const Layout L2(other, H);
  std::mt19937 other_rng(kSeed + 1);  // leaves rng, and so the next case's inputs, as the CPU host's
  const std::vector<float> xs2 = uniform(other_rng, L2.rows() * H, -1, 1);
  int32_t* d_other = to_device(other);
  float* d_x2 = to_device(xs2);
  Seqs x2{d_x2, L2.rows() * H, d_other, B + 1, B + 1, H};
  float* d_o = filled(L2.total, NAN);
  Causal o{d_o, L2.total, nullptr, 0, 0, 0};
  expect(causal_scores_with_prelude(pre, &x2, &o) == DCC_OK &&
             matches(to_host(d_o, size_t(L2.total)).data(), scores(other, H, L2, xs2)),
         "a handle held for other lengths gives the scores of the call's lengths");
  // Refused with a handle: a NULL handle, a short result; the output untouched.
  const std::vector<float> before = to_host(d_o, size_t(L2.total));
  expect(causal_scores_with_prelude(nullptr, &x2, &o) == DCC_ERR_NULL_POINTER, "a NULL handle is refused");
  o.scores_len = L2.total - 1;
  expect(causal_scores_with_prelude(pre, &x2, &o) == DCC_ERR_SIZE_MISMATCH,
         "a short result is refused with a handle");
  expect(to_host(d_o, size_t(L2.total)) == before, "the refused _with_prelude calls leave the output untouched");
  dcc_prelude_destroy(pre);
  for (void* q : {(void*)d_x, (void*)d_len, (void*)d_s, (void*)d_in, (void*)d_p, (void*)d_y, (void*)d_s2, (void*)d_p2,
                  (void*)d_y2, (void*)d_other, (void*)d_x2, (void*)d_o})
    cudaFree(q);
  std::printf("B=%lld H=%d triangle=%lld: %s\n", (long long)B, H, (long long)total, ok ? "equal" : "DIFFERENT");
  expect(ok, "all functions match the float64 reference");
}

void bad_arguments() {
  const int H = 2;
  const std::vector<int32_t> lens{2, 3};  // 5 token rows, 3 + 6 = 9 score rows
  float* d_xs = filled(5 * H, 1.f);
  int32_t* d_len = to_device(lens);
  float* d_o = filled(9 * H, 7.f);
  Seqs x{d_xs, 5 * H, d_len, 2, 2, H};
  Causal out{d_o, 9 * H, nullptr, 0, 0, 0};
  auto reset = [&] { cuda_ok(cudaMemcpy(d_o, std::vector<float>(9 * H, 7.f).data(), 9 * H * sizeof(float),
                                        cudaMemcpyHostToDevice), "reset"); };
  auto untouched = [&] {
    const std::vector<float> o = to_host(d_o, 9 * H);
    return std::all_of(o.begin(), o.end(), [](float v) { return v == 7.f; });
  };
  expect(causal_scores(&x, &out) == DCC_OK, "the valid call succeeds");
  expect(!untouched(), "the valid call writes the output");
  reset();
  Causal keep = out;

  // A negative length, in device memory: the wrapper's host copy sees it.
  int32_t* d_neg = to_device(std::vector<int32_t>{2, -1});
  Seqs bad = x;
  bad.seqlen = d_neg;
  expect(causal_scores(&bad, &out) == DCC_ERR_NEGATIVE_LENGTH && untouched(), "a negative length is rejected");
  Seqs ya{};
  expect(causal_attention_meta(&bad, &ya) == DCC_ERR_NEGATIVE_LENGTH, "causal_attention_meta rejects a negative length");
  dcc_prelude* pre = nullptr;
  expect(causal_scores_prelude(&bad, &pre) == DCC_ERR_NEGATIVE_LENGTH && pre == nullptr,
         "causal_scores_prelude rejects a negative length and makes no handle");
  bad = x;
  bad.seqlen_len = 1;
  expect(causal_scores(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short seqlen_len is rejected");
  bad = x;
  bad.data_len = 5 * H - 1;
  expect(causal_scores(&bad, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a wrong data_len is rejected");
  bad = x;
  bad.seqlen = nullptr;
  expect(causal_scores(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL length array is rejected");
  bad = x;
  bad.data = nullptr;
  expect(causal_scores(&bad, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL data pointer is rejected");
  expect(causal_scores(nullptr, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL argument is rejected");
  expect(causal_scores(&x, nullptr) == DCC_ERR_NULL_POINTER && untouched(), "a NULL result is rejected");
  out.scores = nullptr;
  expect(causal_scores(&x, &out) == DCC_ERR_NULL_POINTER && untouched(), "a NULL result pointer is rejected");
  out = keep;
  out.scores_len = 9 * H - 1;
  expect(causal_scores(&x, &out) == DCC_ERR_SIZE_MISMATCH && untouched(), "a short result is rejected");
  out = keep;
  // A triangular input: its scores_len must be the triangle's count.
  float* d_r = filled(9 * H, 5.f);
  Causal in{d_xs, 9 * H - 2, d_len, 2, 2, H};
  Causal res{d_r, 9 * H, nullptr, 0, 0, 0};
  const std::vector<float> r = (causal_softmax(&in, &res) == DCC_ERR_SIZE_MISMATCH) ? to_host(d_r, 9 * H)
                                                                                      : std::vector<float>{};
  expect(!r.empty() && std::all_of(r.begin(), r.end(), [](float v) { return v == 5.f; }),
         "a wrong triangular scores_len is rejected");
  // Offsets overflow: (i + 1) * H for H = 2^62.
  Seqs huge = x;
  huge.H = int64_t(1) << 62;
  expect(causal_scores_meta(&huge, &out) == DCC_ERR_OVERFLOW, "an offset overflow is rejected");
  Seqs neg_size = x;
  neg_size.H = -1;
  expect(causal_scores(&neg_size, &out) == DCC_ERR_INVALID_ARGUMENT && untouched(), "a negative size is rejected");
  // Still usable after the refusals.
  expect(causal_scores(&x, &out) == DCC_OK && !untouched(), "a valid call after the refusals succeeds");
  for (void* q : {(void*)d_xs, (void*)d_len, (void*)d_o, (void*)d_neg, (void*)d_r}) cudaFree(q);
}

}  // namespace

int main() {
  std::mt19937 rng(causal_ref::kSeed);
  for (const auto& c : causal_ref::cases()) run_case(rng, c.first, c.second);
  bad_arguments();
  if (failures) {
    std::printf("causal cuda host check: %d failure(s)\n", failures);
    return 1;
  }
  std::printf("causal cuda host check: OK\n");
  return 0;
}
