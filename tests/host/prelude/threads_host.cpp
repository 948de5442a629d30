// Issue 14, defect 2: the prelude cache under concurrent calls. Many host
// threads call the generated mha with more distinct length patterns than a
// tiny DCC_PRELUDE_CACHE_BYTES holds, so calls keep evicting each other's
// prelude units (and, with a budget below one unit, a call's own earlier
// units). Each call's units are pinned until it returns: every result must
// equal, bit for bit, the single-threaded result of the same arguments with
// the prelude held by the host (mha_with_prelude: no cache involved). Run
// under ASan (the asan preset) and TSan (scripts/tsan_check.sh), a call that
// reads an evicted unit is a use-after-free report; in a plain build it is
// a wrong result, most of the time.
//
//   threads_host [HOST_THREADS [CALLS_PER_THREAD [POOL_THREADS]]]
//
// POOL_THREADS (default: the pool's own) is 2 under scripts/tsan_check.sh.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "mha.h"

namespace {

constexpr int64_t kBatch = 5, kHeads = 2, kDim = 8;

struct Pattern {
  std::vector<int32_t> ql, kl;
  std::vector<float> q, k, v, expected;
};

// Runs mha on pattern `p`, into `out` (sized by the caller), through the
// cache or with a held prelude.
dcc_status call(Pattern& p, std::vector<float>& out, const dcc_prelude* held) {
  PackedQueries q{p.q.data(), static_cast<int64_t>(p.q.size()), p.ql.data(), kBatch, kBatch, kHeads,
                  kDim};
  PackedKV kv{p.k.data(),  static_cast<int64_t>(p.k.size()),
              p.v.data(),  static_cast<int64_t>(p.v.size()),
              p.kl.data(), kBatch,
              kBatch,      kHeads,
              kDim};
  PackedQueries r{out.data(), static_cast<int64_t>(out.size()), nullptr, 0, 0, 0, 0};
  return held ? mha_with_prelude(held, &q, &kv, &r) : mha(&q, &kv, &r);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 40;
  if (argc > 3) dcc_set_num_threads(std::atoi(argv[3]));
  const int patterns = 48;
  const char* budget = std::getenv("DCC_PRELUDE_CACHE_BYTES");
  if (!budget || std::strtoull(budget, nullptr, 10) == 0 ||
      std::strtoull(budget, nullptr, 10) > 4096) {
    std::fprintf(stderr, "set DCC_PRELUDE_CACHE_BYTES to a tiny budget (1..4096), not `%s`\n",
                 budget ? budget : "");
    return 2;
  }
  std::mt19937 rng(14);
  std::vector<Pattern> ps(patterns);
  for (auto& p : ps) {
    int64_t tq = 0, tk = 0;
    for (int64_t b = 0; b < kBatch; ++b) {
      p.ql.push_back(static_cast<int32_t>(rng() % 9));
      p.kl.push_back(static_cast<int32_t>(rng() % 9 + 1));
      tq += p.ql.back();
      tk += p.kl.back();
    }
    for (auto [x, n] : {std::pair{&p.q, tq}, {&p.k, tk}, {&p.v, tk}}) {
      x->resize(n * kHeads * kDim);
      for (auto& e : *x) e = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
    }
    // The expected result: one thread, the prelude held (never evicted).
    p.expected.assign(p.q.size(), 0.0f);
    dcc_prelude* held = nullptr;
    PackedQueries q{
        p.q.data(), static_cast<int64_t>(p.q.size()), p.ql.data(), kBatch, kBatch, kHeads, kDim};
    PackedKV kv{p.k.data(),  static_cast<int64_t>(p.k.size()),
                p.v.data(),  static_cast<int64_t>(p.v.size()),
                p.kl.data(), kBatch,
                kBatch,      kHeads,
                kDim};
    if (mha_prelude(&q, &kv, &held) != DCC_OK || call(p, p.expected, held) != DCC_OK) {
      std::fprintf(stderr, "single-threaded mha failed: %s\n", dcc_last_error());
      return 1;
    }
    dcc_prelude_destroy(held);
  }

  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<float> out;
      for (int r = 0; r < rounds; ++r) {
        Pattern& p = ps[(r * 7 + t * 13) % patterns];
        out.assign(p.expected.size(), -7.0f);
        if (call(p, out, nullptr) != DCC_OK) {
          failed++;
          continue;
        }
        if (std::memcmp(out.data(), p.expected.data(), out.size() * sizeof(float)) != 0) wrong++;
      }
    });
  }
  for (auto& th : pool) th.join();
  uint64_t hits = 0, misses = 0;
  size_t bytes = 0;
  dcc_prelude_cache_stats(dcc_default_prelude_cache(), &hits, &misses, &bytes);
  std::printf(
      "%d threads x %d calls, %d patterns, budget %s bytes: %llu hits, %llu misses, %zu "
      "bytes cached; %d wrong, %d failed\n",
      threads, rounds, patterns, budget, static_cast<unsigned long long>(hits),
      static_cast<unsigned long long>(misses), bytes, wrong.load(), failed.load());
  // More misses than the distinct units of the patterns: the budget made calls evict.
  const uint64_t units = (hits + misses) / static_cast<uint64_t>(threads * rounds);
  if (wrong != 0 || failed != 0 || misses <= static_cast<uint64_t>(patterns) * units) return 1;
  std::printf("prelude threads check: OK\n");
  return 0;
}
