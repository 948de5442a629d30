// bench_prelude: what the prelude costs per call when a host computes it once
// per batch and reuses it, for examples/mha.toy's `mha` (CPU library built by
// dccc at build time) on the B = 128 line of a length batch (default race),
// H = 8, D = 64, self-attention (keys with the queries' lengths).
//
// Prints, each the median of --repeat timings (steady_clock):
//   prelude       mha_prelude into a fresh handle: checking the sizes and
//                 lengths and computing every offset array (what a held
//                 prelude costs once per batch), and its memory in bytes;
//   held call     everything mha_with_prelude does before the kernel (argument
//                 checks, key building, the held arrays looked up and their
//                 lengths compared in full) -- timed on calls whose result
//                 capacity is one element short, which fail just before the
//                 kernel, so this is an upper bound of the per-call prelude
//                 overhead (it includes all argument checks and recording the
//                 error message);
//   cached call   the same for plain `mha`, whose arrays come from the
//                 process-wide cache (a hit);
//   per call over --calls calls: prelude / calls + held call, against the aim
//                 of 10 us.
// Then it runs --calls real calls (default 6) with the held prelude and one
// plain call, checks that every result equals the plain call's bit for bit,
// and prints the kernel time. Exits 1 only when a call fails or results differ.
//
//   build/bench/bench_prelude [--seqlens DIR] [--batch race] [--repeat N] [--calls N]
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

}  // namespace

int main(int argc, char** argv) {
  std::string dir = DCCC_SEQLENS_DIR, batch = "race";
  int repeat = 2001, calls = 6;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seqlens" && i + 1 < argc) dir = argv[++i];
    else if (a == "--batch" && i + 1 < argc) batch = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--calls" && i + 1 < argc) calls = std::max(0, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_prelude [--seqlens DIR] [--batch NAME] [--repeat N] [--calls N]\n");
      return 2;
    }
  }
  const int B = 128, H = 8, D = 64;
  std::vector<int32_t> lens = read_lengths(dir + "/" + batch + ".txt", B);
  if ((int)lens.size() != B) {
    std::fprintf(stderr, "bench_prelude: no line with %d lengths for B = %d in %s/%s.txt\n", B, B, dir.c_str(),
                 batch.c_str());
    return 2;
  }
  int64_t total = 0;
  for (int32_t l : lens) total += l;
  std::vector<float> qd(total * H * D), kd(qd.size()), vd(qd.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&qd, &kd, &vd})
    for (auto& x : *v) x = u(rng);
  std::vector<int32_t> klens = lens;  // the keys' own array, equal lengths
  PackedQueries q{qd.data(), (int64_t)qd.size(), lens.data(), B, B, H, D};
  PackedKV kv{kd.data(), (int64_t)kd.size(), vd.data(), (int64_t)vd.size(), klens.data(), B, B, H, D};
  std::vector<float> out(qd.size());

  // The prelude: computed into a fresh handle each time.
  std::vector<double> t_prelude;
  for (int r = 0; r < repeat; ++r) {
    dcc_prelude* p = nullptr;
    auto t0 = Clock::now();
    dcc_status st = mha_prelude(&q, &kv, &p);
    t_prelude.push_back(us_since(t0));
    if (st != DCC_OK) {
      std::fprintf(stderr, "bench_prelude: mha_prelude: %s\n", dcc_last_error());
      return 1;
    }
    dcc_prelude_destroy(p);
  }
  dcc_prelude* held = nullptr;
  if (mha_prelude(&q, &kv, &held) != DCC_OK) return 1;
  int64_t entries = 0;
  size_t bytes = 0;
  dcc_prelude_stats(held, &entries, &bytes);

  // Everything before the kernel: a result one element short fails there.
  PackedQueries short_out{out.data(), (int64_t)out.size() - 1, nullptr, 0, 0, 0, 0};
  auto before_kernel = [&](bool with_held) {
    std::vector<double> t;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = Clock::now();
      dcc_status st = with_held ? mha_with_prelude(held, &q, &kv, &short_out) : mha(&q, &kv, &short_out);
      t.push_back(us_since(t0));
      if (st != DCC_ERR_SIZE_MISMATCH || !std::strstr(dcc_last_error(), "result.data_len")) {
        std::fprintf(stderr, "bench_prelude: expected the result-capacity error, got %s: %s\n", dcc_status_name(st),
                     dcc_last_error());
        std::exit(1);
      }
    }
    return median(t);
  };
  double held_us = before_kernel(true);
  double cached_us = before_kernel(false);
  double prelude_us = median(t_prelude);
  std::printf("bench_prelude: mha (examples/mha.toy, CPU), %s B=%d H=%d D=%d, %lld query rows, self-attention\n",
              batch.c_str(), B, H, D, (long long)total);
  std::printf("  prelude (mha_prelude, fresh handle)  %8.3f us   memory %zu bytes in %lld arrays\n", prelude_us, bytes,
              (long long)entries);
  std::printf("  held call, before the kernel         %8.3f us   (mha_with_prelude; upper bound of per-call prelude cost)\n",
              held_us);
  std::printf("  cached call, before the kernel       %8.3f us   (mha, process-wide cache hit)\n", cached_us);
  if (calls > 0) {
    double per = prelude_us / calls + held_us;
    std::printf("  per call over %d calls: %.3f us (prelude / %d + held call): %s the 10 us aim\n", calls, per, calls,
                per < 10 ? "meets" : "misses");
  }

  // Real calls: the held prelude gives the plain call's results.
  if (calls > 0) {
    PackedQueries ref{nullptr, 0, nullptr, 0, 0, 0, 0};
    std::vector<float> want(qd.size());
    ref.data = want.data();
    ref.data_len = (int64_t)want.size();
    auto t0 = Clock::now();
    if (mha(&q, &kv, &ref) != DCC_OK) {
      std::fprintf(stderr, "bench_prelude: mha: %s\n", dcc_last_error());
      return 1;
    }
    double plain_ms = us_since(t0) / 1000;
    std::vector<double> ms;
    for (int c = 0; c < calls; ++c) {
      std::fill(out.begin(), out.end(), 0.f);
      PackedQueries o{out.data(), (int64_t)out.size(), nullptr, 0, 0, 0, 0};
      auto t1 = Clock::now();
      if (mha_with_prelude(held, &q, &kv, &o) != DCC_OK) {
        std::fprintf(stderr, "bench_prelude: mha_with_prelude: %s\n", dcc_last_error());
        return 1;
      }
      ms.push_back(us_since(t1) / 1000);
      if (std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) != 0) {
        std::fprintf(stderr, "bench_prelude: call %d with the held prelude differs from plain mha\n", c);
        return 1;
      }
    }
    std::printf("  %d calls with the held prelude: median %.1f ms each (plain mha %.1f ms), results equal bit for bit\n",
                calls, median(ms), plain_ms);
  }
  dcc_prelude_destroy(held);
  return 0;
}
