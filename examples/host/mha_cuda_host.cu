// A CUDA host of the library that `dccc --target=cuda` builds from
// examples/mha.toy: device buffers in, device buffers out. Checks the result
// against a float64 reference written here, independently of dccc, then the
// error paths: bad arguments are refused before anything is written, and
// CUDA failures (out of memory, an illegal address in a kernel) come back as
// DCC_ERR_CUDA with the CUDA error's text, never an abort. Prints
// "mha cuda host check: OK" when everything holds.
//
//   nvcc -o mha_cuda_host mha_cuda_host.cu -I DIR DIR/mha.so   (DIR: mha.h, dccrt.h)
//   mha_cuda_host [--fused]
//
// --fused: the library is the fused attention kernel (the CUDA target's
// default for mha.toy), which allocates no scores, so a 2^20-token sequence
// cannot run out of memory (it would read the test's small buffers out of
// bounds); the out-of-memory case is for the materialised libraries
// (mha_fused.so, mha_remap.so: schedules that keep the scores).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mha.h"

static int failures = 0;
#define CHECK(cond, ...)                        \
  do {                                          \
    if (!(cond)) {                              \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);                 \
      std::printf("\n");                        \
      ++failures;                               \
    }                                           \
  } while (0)

template <typename T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)) != cudaSuccess) std::abort();
  cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}
template <typename T>
std::vector<T> to_host(const T* p, size_t n) {
  std::vector<T> v(n);
  cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

int main(int argc, char** argv) {
  const bool fused = argc > 1 && std::strcmp(argv[1], "--fused") == 0;
  const int64_t H = 8, D = 64;
  const std::vector<int32_t> lens = {3, 0, 7, 1, 12};
  const int64_t B = static_cast<int64_t>(lens.size());
  int64_t total = 0;
  std::vector<int64_t> start;
  for (int32_t n : lens) start.push_back(total), total += n;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> q(total * H * D), k(q.size()), v(q.size());
  for (auto* x : {&q, &k, &v})
    for (float& f : *x) f = dist(rng);

  // The float64 reference: softmax(q k^T / sqrt(D)) v per sequence and head.
  std::vector<double> ref(q.size(), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < lens[b]; ++i)
      for (int64_t h = 0; h < H; ++h) {
        std::vector<double> s(lens[b]);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < lens[b]; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < D; ++d)
            acc += double(q[((start[b] + i) * H + h) * D + d]) * k[((start[b] + j) * H + h) * D + d];
          s[j] = acc / std::sqrt(double(D));
          mx = std::max(mx, s[j]);
        }
        for (int64_t j = 0; j < lens[b]; ++j) sum += s[j] = std::exp(s[j] - mx);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < lens[b]; ++j) acc += s[j] / sum * v[((start[b] + j) * H + h) * D + d];
          ref[((start[b] + i) * H + h) * D + d] = acc;
        }
      }

  int32_t* d_len = to_device(lens);
  float *d_q = to_device(q), *d_k = to_device(k), *d_v = to_device(v);
  PackedQueries qs = {d_q, total * H * D, d_len, B, B, H, D};
  PackedKV kvs = {d_k, total * H * D, d_v, total * H * D, d_len, B, B, H, D};

  // meta, allocate, run.
  PackedQueries res = {};
  CHECK(mha_meta(&qs, &kvs, &res) == DCC_OK, "mha_meta: %s", dcc_last_error());
  CHECK(res.data_len == total * H * D && res.seqlen == d_len, "mha_meta filled data_len %lld",
        (long long)res.data_len);
  const std::vector<float> sentinel(total * H * D, 7.0f);
  float* d_out = to_device(sentinel);
  res.data = d_out;
  dcc_status st = mha(&qs, &kvs, &res);
  CHECK(st == DCC_OK, "mha: %s", dcc_last_error());
  std::vector<float> out = to_host(d_out, total * H * D);
  double worst = 0;
  for (size_t x = 0; x < out.size(); ++x) worst = std::max(worst, std::fabs(out[x] - ref[x]));
  std::printf("result vs float64 reference: max abs error %.2e over %zu values\n", worst, out.size());
  CHECK(worst < 1e-5, "max error %g", worst);

  auto untouched = [&](const char* what) {
    std::vector<float> now = to_host(d_out, total * H * D);
    CHECK(std::memcmp(now.data(), sentinel.data(), now.size() * sizeof(float)) == 0, "%s: output was written", what);
  };
  auto expect = [&](dcc_status got, dcc_status want, const char* what, const char* text) {
    CHECK(got == want, "%s: status %s, want %s (%s)", what, dcc_status_name(got), dcc_status_name(want), dcc_last_error());
    CHECK(std::strstr(dcc_last_error(), text) != nullptr, "%s: message \"%s\" lacks \"%s\"", what, dcc_last_error(), text);
    std::printf("%-28s -> %s: %s\n", what, dcc_status_name(got), dcc_last_error());
  };

  // Bad arguments: refused before any write, on the host copies of the lengths.
  cudaMemcpy(d_out, sentinel.data(), sentinel.size() * sizeof(float), cudaMemcpyHostToDevice);
  std::vector<int32_t> neg = lens;
  neg[2] = -4;
  int32_t* d_neg = to_device(neg);
  PackedQueries qn = qs;
  qn.seqlen = d_neg;
  expect(mha(&qn, &kvs, &res), DCC_ERR_NEGATIVE_LENGTH, "negative length", "lengths must be >= 0");
  untouched("negative length");
  PackedKV kb = kvs;
  kb.B = B + 1;
  expect(mha(&qs, &kb, &res), DCC_ERR_SIZE_MISMATCH, "B of q vs kv", "size `B`");
  untouched("B of q vs kv");
  PackedQueries qnull = qs;
  qnull.data = nullptr;
  expect(mha(&qnull, &kvs, &res), DCC_ERR_NULL_POINTER, "null data", "is NULL");
  PackedQueries qshort = qs;
  qshort.data_len -= 1;
  expect(mha(&qshort, &kvs, &res), DCC_ERR_SIZE_MISMATCH, "data_len one short", "data_len");
  untouched("data_len one short");

  // Out of memory: one sequence of 2^20 tokens needs 2^40 * H scores. The
  // data pointers are never read before the allocation fails, so small
  // buffers with the claimed element counts suffice.
  if (fused) {
    std::printf("%-28s -> skipped (--fused: no scores are allocated)\n", "out of memory");
  } else {
    std::vector<int32_t> huge = {1 << 20};
    int32_t* d_huge = to_device(huge);
    PackedQueries qh = {d_q, (int64_t(1) << 20) * H * D, d_huge, 1, 1, H, D};
    PackedKV kh = {d_k, (int64_t(1) << 20) * H * D, d_v, (int64_t(1) << 20) * H * D, d_huge, 1, 1, H, D};
    PackedQueries rh = {d_out, (int64_t(1) << 20) * H * D, nullptr, 0, 0, 0, 0};
    expect(mha(&qh, &kh, &rh), DCC_ERR_CUDA, "out of memory", "memory");
    untouched("out of memory");
  }

  // Still usable after an allocation failure.
  cudaMemcpy(d_out, sentinel.data(), sentinel.size() * sizeof(float), cudaMemcpyHostToDevice);
  CHECK(mha(&qs, &kvs, &res) == DCC_OK, "mha after OOM: %s", dcc_last_error());

  // A host pointer where device memory belongs: the kernel faults; the
  // error comes back as a status (the CUDA context is unusable afterwards,
  // so this is the last case).
  PackedQueries qhost = qs;
  std::vector<float> host_q = q;
  qhost.data = host_q.data();
  // With HMM (a recent driver and kernel), the GPU may read pageable host
  // memory; then the call succeeds and must give the right result.
  dcc_status hs = mha(&qhost, &kvs, &res);
  if (hs == DCC_OK) {
    std::vector<float> again = to_host(d_out, total * H * D);
    double w = 0;
    for (size_t x = 0; x < again.size(); ++x) w = std::max(w, std::fabs(again[x] - ref[x]));
    CHECK(w < 1e-5, "host pointer read through HMM: max error %g", w);
    std::printf("%-28s -> DCC_OK (the GPU read host memory through HMM; max error %.2e)\n", "host pointer as data", w);
  } else {
    CHECK(hs == DCC_ERR_CUDA, "host pointer: status %s (%s)", dcc_status_name(hs), dcc_last_error());
    std::printf("%-28s -> %s: %s\n", "host pointer as data", dcc_status_name(hs), dcc_last_error());
  }

  if (failures) {
    std::printf("mha cuda host check: %d failure(s)\n", failures);
    return 1;
  }
  std::printf("mha cuda host check: OK\n");
  return 0;
}
