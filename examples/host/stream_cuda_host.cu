// The CUDA target's stream entry point, mha_bf16_on_stream (docs/abi.md,
// "The CUDA target"), on examples/mha_bf16.toy's library -- and, with
// --long, one sequence of 32,768 tokens through the fused attention kernel.
//
//   nvcc -std=c++17 -o stream_host stream_cuda_host.cu -I. ./mha_bf16.so
//   ./stream_host [--long]
//
// Checks (each FAIL line names what broke; exit 0 only when all hold,
// 77 when there is no GPU):
//  1. mha_bf16_on_stream with host length arrays, on a stream of its own,
//     without and with a held prelude, gives bit for bit what mha_bf16
//     (device lengths, waits) gives, and that is within 0.02 of a float64
//     reference computed here from the same bf16 inputs (lengths with
//     zero-length query and key sequences, B = 1 and 17 sequences of
//     1..17 tokens, a sequence of 300).
//  2. The call captured into a CUDA graph (cudaStreamCaptureModeGlobal:
//     any host synchronisation, cudaMemcpy or cudaMalloc in the call would
//     invalidate the capture) and replayed twice with new data of the same
//     lengths matches mha_bf16 on that data bit for bit.
//  3. Wrong lengths (a negative one; a data_len that disagrees; a result
//     too small) return the CPU target's statuses and launch nothing: the
//     output keeps its sentinel after the stream is synchronised.
//  4. A repeated call with known lengths costs only host time (printed):
//     the prelude, the tile list and the lengths' device copies come from
//     the cache.
//  --long: B = 1, 32,768 tokens, H = 2, D = 64: 64 sampled query rows
//     against float64 (all 32,768 keys each), no NaN anywhere, and the
//     device memory pool's high-water mark during the call below 64 MiB
//     (the scores would be 4 GiB in bf16).
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "mha_bf16.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s (dcc_last_error: %s)\n", what, dcc_last_error());
    ++failures;
  }
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

uint16_t to_bf16(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}
double from_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T* dev(const std::vector<T>& v) {
  T* p = nullptr;
  cuda_ok(cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)), "cudaMalloc");
  if (!v.empty()) cuda_ok(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}
template <typename T>
void upload(T* p, const std::vector<T>& v) {
  if (!v.empty()) cuda_ok(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
}
template <typename T>
std::vector<T> host(const T* p, size_t n) {
  std::vector<T> v(n);
  if (n) cuda_ok(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return v;
}

/// One batch on the device: q, k, v, out (bf16 bits), the lengths on the
/// device (for mha_bf16) and on the host (for mha_bf16_on_stream).
struct Batch {
  std::vector<int32_t> ql, kl;
  int64_t H, D, nq = 0, nk = 0;
  std::vector<uint16_t> q, k, v;
  uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
  int32_t *dql = nullptr, *dkl = nullptr;

  Batch(std::vector<int32_t> qlen, std::vector<int32_t> klen, int64_t h, int64_t d) : ql(qlen), kl(klen), H(h), D(d) {
    for (int32_t n : ql) nq += n;
    for (int32_t n : kl) nk += n;
    q.resize(nq * H * D);
    k.resize(nk * H * D);
    v.resize(nk * H * D);
    dq = dev(q);
    dk = dev(k);
    dv = dev(v);
    dout = dev(std::vector<uint16_t>(std::max<int64_t>(1, nq * H * D), 0x7FC0));
    dql = dev(ql);
    dkl = dev(kl);
  }
  void fill(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& x : q) x = to_bf16(2 * u(rng));
    for (auto& x : k) x = to_bf16(2 * u(rng));
    for (auto& x : v) x = to_bf16(u(rng));
    upload(dq, q);
    upload(dk, k);
    upload(dv, v);
  }
  void poison() { upload(dout, std::vector<uint16_t>(std::max<int64_t>(1, nq * H * D), 0x7FC0)); }
  /// The structs: device lengths (host_lengths false) or host ones.
  void args(bool host_lengths, PackedQueries* aq, PackedKV* akv, PackedQueries* out) {
    *aq = PackedQueries{dq, nq * H * D, host_lengths ? ql.data() : dql, (int64_t)ql.size(), (int64_t)ql.size(), H, D};
    *akv = PackedKV{dk, nk * H * D, dv, nk * H * D, host_lengths ? kl.data() : dkl, (int64_t)kl.size(),
                    (int64_t)kl.size(), H, D};
    *out = PackedQueries{dout, nq * H * D, nullptr, 0, 0, 0, 0};
  }
  std::vector<uint16_t> result() { return host(dout, nq * H * D); }
  ~Batch() {
    for (void* p : {(void*)dq, (void*)dk, (void*)dv, (void*)dout, (void*)dql, (void*)dkl}) cudaFree(p);
  }
};

/// Query row (b, i, h) against float64; returns the largest error.
double check_row(const Batch& x, size_t b, int64_t i, int64_t h, const std::vector<uint16_t>& out) {
  int64_t q0 = 0, k0 = 0;
  for (size_t c = 0; c < b; ++c) {
    q0 += x.ql[c];
    k0 += x.kl[c];
  }
  const int64_t H = x.H, D = x.D, n = x.kl[b];
  std::vector<double> s(n);
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < D; ++d)
      dot += from_bf16(x.q[((q0 + i) * H + h) * D + d]) * from_bf16(x.k[((k0 + j) * H + h) * D + d]);
    s[j] = dot / std::sqrt(double(D));
    m = std::max(m, s[j]);
  }
  double sum = 0;
  std::vector<double> ref(D, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double p = std::exp(s[j] - m);
    sum += p;
    for (int64_t d = 0; d < D; ++d) ref[d] += p * from_bf16(x.v[((k0 + j) * H + h) * D + d]);
  }
  double worst = 0;
  for (int64_t d = 0; d < D; ++d) {
    const double r = sum == 0 ? 0 : ref[d] / sum;
    const double got = from_bf16(out[((q0 + i) * H + h) * D + d]);
    if (std::isnan(got)) return INFINITY;
    worst = std::max(worst, std::fabs(got - r));
  }
  return worst;
}

double check_all(const Batch& x, const std::vector<uint16_t>& out) {
  double worst = 0;
  for (size_t b = 0; b < x.ql.size(); ++b)
    for (int64_t i = 0; i < x.ql[b]; ++i)
      for (int64_t h = 0; h < x.H; ++h) worst = std::max(worst, check_row(x, b, i, h, out));
  return worst;
}

void stream_checks() {
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> patterns = {
      {{0, 1, 17, 5, 3, 0}, {3, 0, 17, 9, 1, 0}}, {{1}, {1}}, {{300, 2}, {290, 70}}};
  std::vector<int32_t> small, smallk;
  for (int n = 1; n <= 17; ++n) {
    small.push_back(n);
    smallk.push_back(18 - n);
  }
  patterns.push_back({small, smallk});
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  unsigned seed = 1;
  for (const auto& [ql, kl] : patterns) {
    Batch x(ql, kl, 2, 64);
    x.fill(seed++);
    PackedQueries q, out;
    PackedKV kv;
    // The plain call: device lengths, waits.
    x.args(false, &q, &kv, &out);
    expect(mha_bf16(&q, &kv, &out) == DCC_OK, "mha_bf16");
    const std::vector<uint16_t> plain = x.result();
    const double err = check_all(x, plain);
    std::printf("B = %zu: mha_bf16 max |err| vs float64 = %.4g\n", ql.size(), err);
    expect(err <= 0.02, "mha_bf16 against float64");

    // 1. On a stream, host lengths, the cache.
    x.poison();
    x.args(true, &q, &kv, &out);
    expect(mha_bf16_on_stream(NULL, &q, &kv, &out, s) == DCC_OK, "mha_bf16_on_stream (cache)");
    expect(out.seqlen == x.ql.data(), "the result's seqlen is the host array given");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    expect(x.result() == plain, "mha_bf16_on_stream (cache) equals mha_bf16");
    // ... and on the default stream.
    x.poison();
    expect(mha_bf16_on_stream(NULL, &q, &kv, &out, NULL) == DCC_OK, "mha_bf16_on_stream (default stream)");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    expect(x.result() == plain, "mha_bf16_on_stream (default stream) equals mha_bf16");

    // With a held prelude (made from device lengths, used with host ones).
    dcc_prelude* pre = NULL;
    PackedQueries dq_, dout_;
    PackedKV dkv_;
    x.args(false, &dq_, &dkv_, &dout_);
    expect(mha_bf16_prelude(&dq_, &dkv_, &pre) == DCC_OK, "mha_bf16_prelude");
    x.poison();
    expect(mha_bf16_on_stream(pre, &q, &kv, &out, s) == DCC_OK, "mha_bf16_on_stream (held prelude)");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    expect(x.result() == plain, "mha_bf16_on_stream (held prelude) equals mha_bf16");

    // 2. Captured into a graph, replayed with new data of the same lengths.
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    x.poison();
    cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    const dcc_status cst = mha_bf16_on_stream(pre, &q, &kv, &out, s);
    const cudaError_t ce = cudaStreamEndCapture(s, &g);
    expect(cst == DCC_OK, "mha_bf16_on_stream while capturing");
    if (ce != cudaSuccess) std::printf("FAIL: capture: %s\n", cudaGetErrorString(ce)), ++failures;
    if (cst == DCC_OK && ce == cudaSuccess) {
      cuda_ok(cudaGraphInstantiate(&ge, g, 0), "cudaGraphInstantiate");
      for (int replay = 0; replay < 2; ++replay) {
        x.fill(100 + seed + replay);
        x.poison();
        cuda_ok(cudaGraphLaunch(ge, s), "cudaGraphLaunch");
        cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        const std::vector<uint16_t> replayed = x.result();
        x.poison();
        x.args(false, &dq_, &dkv_, &dout_);
        expect(mha_bf16(&dq_, &dkv_, &dout_) == DCC_OK, "mha_bf16 on the new data");
        expect(replayed == x.result(), "the replayed graph equals mha_bf16 on the new data");
        const double e2 = check_all(x, replayed);
        expect(e2 <= 0.02, "the replayed graph against float64");
        std::printf("B = %zu: graph replay %d max |err| vs float64 = %.4g\n", ql.size(), replay, e2);
      }
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    }
    x.args(true, &q, &kv, &out);

    // 4. The hot path: known lengths, no waiting.
    const int reps = 200;
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) expect(mha_bf16_on_stream(NULL, &q, &kv, &out, s) == DCC_OK, "repeated call");
    auto t1 = std::chrono::steady_clock::now();
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::printf("B = %zu: mha_bf16_on_stream host time per call (cache hits) %.1f us\n", ql.size(),
                std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
    dcc_prelude_destroy(pre);
  }

  // 3. Wrong lengths: the CPU target's statuses, nothing launched.
  {
    Batch x({4, 3}, {5, 2}, 2, 64);
    x.fill(7);
    x.poison();
    PackedQueries q, out;
    PackedKV kv;
    x.args(true, &q, &kv, &out);
    std::vector<int32_t> bad = {4, -3};
    q.seqlen = bad.data();
    expect(mha_bf16_on_stream(NULL, &q, &kv, &out, s) == DCC_ERR_NEGATIVE_LENGTH, "a negative host length");
    std::vector<int32_t> other = {4, 4};
    q.seqlen = other.data();
    expect(mha_bf16_on_stream(NULL, &q, &kv, &out, s) == DCC_ERR_SIZE_MISMATCH, "host lengths that disagree with data_len");
    x.args(true, &q, &kv, &out);
    out.data_len = 1;
    expect(mha_bf16_on_stream(NULL, &q, &kv, &out, s) == DCC_ERR_SIZE_MISMATCH, "a result too small");
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    bool untouched = true;
    for (uint16_t h : x.result()) untouched = untouched && h == 0x7FC0;
    expect(untouched, "nothing launched for the rejected calls");
  }
  cudaStreamDestroy(s);
}

void long_sequence() {
  const int32_t n = 32768;
  Batch x({n}, {n}, 2, 64);
  x.fill(3);
  PackedQueries q, out;
  PackedKV kv;
  x.args(true, &q, &kv, &out);
  cudaMemPool_t pool;
  cuda_ok(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  uint64_t zero = 0, high = 0;
  cuda_ok(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "resetting the pool's high-water mark");
  auto t0 = std::chrono::steady_clock::now();
  expect(mha_bf16_on_stream(NULL, &q, &kv, &out, NULL) == DCC_OK, "mha_bf16_on_stream, 32,768 tokens");
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto t1 = std::chrono::steady_clock::now();
  cuda_ok(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), "the pool's high-water mark");
  const std::vector<uint16_t> got = x.result();
  bool finite = true;
  for (uint16_t h : got) finite = finite && !std::isnan(from_bf16(h));
  expect(finite, "no NaN in the 32,768-token output");
  double worst = 0;
  for (int r = 0; r < 64; ++r) {
    const int64_t i = r == 63 ? n - 1 : int64_t(r) * (n / 63);
    for (int64_t h = 0; h < x.H; ++h) worst = std::max(worst, check_row(x, 0, i, h, got));
  }
  std::printf("32,768 tokens, H = 2, D = 64: %.2f ms (first call, with its prelude), pool high-water %.1f MiB, "
              "max |err| vs float64 on 128 sampled rows = %.4g\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(), high / 1048576.0, worst);
  expect(worst <= 0.02, "32,768 tokens against float64");
  expect(high < (64ull << 20), "no O(s^2) allocation (pool high-water below 64 MiB)");
}

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("stream cuda host check: SKIPPED (no GPU)\n");
    return 77;
  }
  const bool long_only = argc > 1 && std::strcmp(argv[1], "--long") == 0;
  if (long_only) long_sequence();
  else stream_checks();
  std::printf("%s cuda host check: %s\n", long_only ? "long" : "stream", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
