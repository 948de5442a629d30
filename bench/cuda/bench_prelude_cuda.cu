// bench_prelude_cuda: the prelude of examples/mha.toy's `mha` built with
// `dccc --target=cuda`, on the B = 128 line of a length batch (default race),
// H = 8, D = 64, self-attention, on the GPU. Where the device copy of the
// prelude arrays comes from is chosen by DCCC_CUDA_PRELUDE in the environment:
// unset (or `host`) uploads the host arrays, `gpu` computes them with a
// one-thread kernel from the device lengths; run_prelude_gpu.sh runs both.
//
// Prints medians of --repeat timings (steady_clock; every call returns after
// its kernels finish):
//   prelude      mha_prelude into a fresh handle (lengths copied to the host,
//                checked, host arrays computed, device copy made), and the
//                handle's host memory;
//   held/cached  everything before the kernels of mha_with_prelude / mha
//                (timed on calls failing on a result one element short);
//   calls        --calls calls (default 6) of mha_with_prelude, and as many of
//                plain mha, with the kernels;
// then checks that every result equals plain mha's bit for bit and prints an
// FNV-1a checksum of the result (equal across both modes when the GPU prelude
// is right). Exits 1 when a call fails or results differ.
//
//   nvcc -O2 -o bench_prelude_cuda bench_prelude_cuda.cu -I DIR DIR/mha.so
//   DCCC_CUDA_PRELUDE=gpu ./bench_prelude_cuda --seqlens DIR
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "mha.h"

namespace {

using bench::Clock;
using bench::median;
using bench::read_lengths;
using bench::us_since;

template <typename T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)) != cudaSuccess) std::abort();
  cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "seqlens", batch = "race";
  int repeat = 201, calls = 6;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seqlens" && i + 1 < argc) dir = argv[++i];
    else if (a == "--batch" && i + 1 < argc) batch = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--calls" && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_prelude_cuda [--seqlens DIR] [--batch NAME] [--repeat N] [--calls N]\n");
      return 2;
    }
  }
  const char* mode_env = std::getenv("DCCC_CUDA_PRELUDE");
  const char* mode = mode_env && std::strcmp(mode_env, "gpu") == 0 ? "gpu" : "host-then-upload";
  const int B = 128, H = 8, D = 64;
  std::vector<int32_t> lens = read_lengths(dir + "/" + batch + ".txt", B);
  if ((int)lens.size() != B) {
    std::fprintf(stderr, "bench_prelude_cuda: no line for B = %d in %s/%s.txt\n", B, dir.c_str(), batch.c_str());
    return 2;
  }
  int64_t total = 0;
  for (int32_t l : lens) total += l;
  std::vector<float> qh(total * H * D), kh(qh.size()), vh(qh.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&qh, &kh, &vh})
    for (auto& x : *v) x = u(rng);
  int32_t *d_ql = to_device(lens), *d_kl = to_device(lens);
  float *d_q = to_device(qh), *d_k = to_device(kh), *d_v = to_device(vh);
  float *d_out = nullptr, *d_ref = nullptr;
  cudaMalloc(&d_out, qh.size() * sizeof(float));
  cudaMalloc(&d_ref, qh.size() * sizeof(float));
  PackedQueries q{d_q, (int64_t)qh.size(), d_ql, B, B, H, D};
  PackedKV kv{d_k, (int64_t)kh.size(), d_v, (int64_t)vh.size(), d_kl, B, B, H, D};

  // Warm-up: CUDA context, memory pool, one plain call.
  PackedQueries ref{d_ref, (int64_t)qh.size(), nullptr, 0, 0, 0, 0};
  if (mha(&q, &kv, &ref) != DCC_OK) {
    std::fprintf(stderr, "bench_prelude_cuda: mha: %s\n", dcc_last_error());
    return 1;
  }

  std::vector<double> t_prelude;
  for (int r = 0; r < repeat; ++r) {
    dcc_prelude* p = nullptr;
    auto t0 = Clock::now();
    dcc_status st = mha_prelude(&q, &kv, &p);
    t_prelude.push_back(us_since(t0));
    if (st != DCC_OK) {
      std::fprintf(stderr, "bench_prelude_cuda: mha_prelude: %s\n", dcc_last_error());
      return 1;
    }
    dcc_prelude_destroy(p);
  }
  dcc_prelude* held = nullptr;
  if (mha_prelude(&q, &kv, &held) != DCC_OK) return 1;
  int64_t entries = 0;
  size_t bytes = 0;
  dcc_prelude_stats(held, &entries, &bytes);

  PackedQueries short_out{d_out, (int64_t)qh.size() - 1, nullptr, 0, 0, 0, 0};
  auto before_kernel = [&](bool with_held) {
    std::vector<double> t;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = Clock::now();
      dcc_status st = with_held ? mha_with_prelude(held, &q, &kv, &short_out) : mha(&q, &kv, &short_out);
      t.push_back(us_since(t0));
      if (st != DCC_ERR_SIZE_MISMATCH) {
        std::fprintf(stderr, "bench_prelude_cuda: expected the result-capacity error: %s\n", dcc_last_error());
        std::exit(1);
      }
    }
    return median(t);
  };
  const double held_us = before_kernel(true), cached_us = before_kernel(false);

  std::vector<float> want(qh.size()), got(qh.size());
  cudaMemcpy(want.data(), d_ref, want.size() * sizeof(float), cudaMemcpyDeviceToHost);
  std::vector<double> t_held, t_plain;
  for (int c = 0; c < calls; ++c) {
    cudaMemset(d_out, 0, qh.size() * sizeof(float));
    PackedQueries o{d_out, (int64_t)qh.size(), nullptr, 0, 0, 0, 0};
    auto t0 = Clock::now();
    if (mha_with_prelude(held, &q, &kv, &o) != DCC_OK) {
      std::fprintf(stderr, "bench_prelude_cuda: mha_with_prelude: %s\n", dcc_last_error());
      return 1;
    }
    t_held.push_back(us_since(t0));
    cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
      std::fprintf(stderr, "bench_prelude_cuda: call %d with the held prelude differs from plain mha\n", c);
      return 1;
    }
    t0 = Clock::now();
    if (mha(&q, &kv, &ref) != DCC_OK) return 1;
    t_plain.push_back(us_since(t0));
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("bench_prelude_cuda: mha (--target=cuda) on %s, %s B=%d H=%d D=%d, %lld rows, device copy: %s\n",
              prop.name, batch.c_str(), B, H, D, (long long)total, mode);
  std::printf("  prelude (mha_prelude, fresh handle)  %9.2f us   host memory %zu bytes, %lld entries (host arrays + device copies)\n",
              median(t_prelude), bytes, (long long)entries);
  std::printf("  held call, before the kernels        %9.2f us\n", held_us);
  std::printf("  cached call, before the kernels      %9.2f us\n", cached_us);
  std::printf("  %d calls: mha_with_prelude median %.1f us, mha median %.1f us; results equal bit for bit\n", calls,
              median(t_held), median(t_plain));
  std::printf("  result checksum %016llx\n", (unsigned long long)fnv1a(want.data(), want.size() * sizeof(float)));
  dcc_prelude_destroy(held);
  return 0;
}
