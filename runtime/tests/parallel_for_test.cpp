// dcc_parallel_for: coverage of every index exactly once, chunking, nesting,
// concurrent callers, exceptions, and the thread-count settings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dccrt.h"

namespace {

using ::testing::HasSubstr;

// Restores the thread count a test changed.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(dcc_get_num_threads()) { dcc_set_num_threads(n); }
  ~ThreadCount() { dcc_set_num_threads(saved_); }

 private:
  int saved_;
};

struct Coverage {
  explicit Coverage(int64_t n, int64_t chunk_grain) : hits(n), grain(chunk_grain) {}
  std::vector<std::atomic<int>> hits;
  int64_t grain;
  std::atomic<int> bad_chunks{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
};

void count_body(void* ctx, int64_t begin, int64_t end) {
  auto& c = *static_cast<Coverage*>(ctx);
  if (begin >= end || (c.grain > 0 && (end - begin > c.grain || begin % c.grain != 0))) {
    c.bad_chunks.fetch_add(1);
  }
  for (int64_t i = begin; i < end; ++i) c.hits[i].fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.threads.insert(std::this_thread::get_id());
}

void ExpectEachIndexOnce(const Coverage& c) {
  int64_t wrong = 0;
  for (const auto& h : c.hits) wrong += h.load() != 1;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(c.bad_chunks.load(), 0);
}

TEST(ParallelFor, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadCount tc(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 100003}) {
      for (int64_t grain : {-1, 0, 1, 3, 64, 5000, 200000}) {
        SCOPED_TRACE(testing::Message()
                     << "threads " << threads << " n " << n << " grain " << grain);
        Coverage c(n, grain);
        ASSERT_EQ(dcc_parallel_for(n, grain, count_body, &c), DCC_OK) << dcc_last_error();
        ExpectEachIndexOnce(c);
        EXPECT_LE(c.threads.size(), static_cast<size_t>(threads));
      }
    }
  }
}

TEST(ParallelFor, CallerParticipates) {
  ThreadCount tc(1);
  Coverage c(100, 10);
  ASSERT_EQ(dcc_parallel_for(100, 10, count_body, &c), DCC_OK);
  ExpectEachIndexOnce(c);
  EXPECT_EQ(c.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ParallelFor, UsesSeveralThreads) {
  ThreadCount tc(4);
  // Chunks that wait until a second thread has run one.
  struct Ctx {
    std::atomic<int> started{0};
    std::atomic<bool> timed_out{false};
  } ctx;
  auto body = [](void* p, int64_t, int64_t) {
    auto& x = *static_cast<Ctx*>(p);
    x.started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (x.started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        x.timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  };
  ASSERT_EQ(dcc_parallel_for(8, 1, body, &ctx), DCC_OK);
  EXPECT_FALSE(ctx.timed_out.load());
}

struct Nested {
  std::vector<std::atomic<int>> hits;
  int64_t inner;
  std::atomic<int> errors{0};
  explicit Nested(int64_t outer, int64_t inner_n) : hits(outer * inner_n), inner(inner_n) {}
};

void inner_body(void* ctx, int64_t begin, int64_t end) {
  auto* slot = static_cast<std::pair<Nested*, int64_t>*>(ctx);
  for (int64_t j = begin; j < end; ++j) slot->first->hits[slot->second * slot->first->inner + j]++;
}

void outer_body(void* ctx, int64_t begin, int64_t end) {
  auto& nested = *static_cast<Nested*>(ctx);
  for (int64_t i = begin; i < end; ++i) {
    std::pair<Nested*, int64_t> slot{&nested, i};
    if (dcc_parallel_for(nested.inner, 7, inner_body, &slot) != DCC_OK) nested.errors++;
  }
}

TEST(ParallelFor, NestedCallsRunSeriallyWithoutDeadlock) {
  ThreadCount tc(4);
  Nested nested(50, 300);
  ASSERT_EQ(dcc_parallel_for(50, 1, outer_body, &nested), DCC_OK);
  EXPECT_EQ(nested.errors.load(), 0);
  int64_t wrong = 0;
  for (const auto& h : nested.hits) wrong += h.load() != 1;
  EXPECT_EQ(wrong, 0);
}

TEST(ParallelFor, ConcurrentCallersAllComplete) {
  ThreadCount tc(4);
  constexpr int kCallers = 6;
  std::vector<std::unique_ptr<Coverage>> cov;
  for (int t = 0; t < kCallers; ++t) cov.push_back(std::make_unique<Coverage>(20000, 13));
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        for (auto& h : cov[t]->hits) h.store(0);
        if (dcc_parallel_for(20000, 13, count_body, cov[t].get()) != DCC_OK) failures++;
        for (const auto& h : cov[t]->hits) {
          if (h.load() != 1) {
            failures++;
            break;
          }
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (const auto& c : cov) EXPECT_EQ(c->bad_chunks.load(), 0);
}

TEST(ParallelFor, ExceptionBecomesAnErrorAndThePoolStillWorks) {
  for (int threads : {1, 4}) {
    ThreadCount tc(threads);
    auto throwing = [](void*, int64_t begin, int64_t) {
      if (begin == 40) throw std::runtime_error("chunk 40 failed");
    };
    EXPECT_EQ(dcc_parallel_for(100, 10, throwing, nullptr), DCC_ERR_INTERNAL);
    EXPECT_STREQ(dcc_last_error(), "dcc_parallel_for: C++ exception: chunk 40 failed");
    Coverage c(1000, 10);
    ASSERT_EQ(dcc_parallel_for(1000, 10, count_body, &c), DCC_OK);
    ExpectEachIndexOnce(c);
  }
}

TEST(ParallelFor, InvalidArguments) {
  EXPECT_EQ(dcc_parallel_for(-1, 1, count_body, nullptr), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(dcc_last_error(), "dcc_parallel_for: n is -1; n must be >= 0");
  EXPECT_EQ(dcc_parallel_for(5, 1, nullptr, nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_parallel_for: body is NULL");
  // n == 0 calls nothing, even with a NULL body.
  EXPECT_EQ(dcc_parallel_for(0, 1, nullptr, nullptr), DCC_OK);
  std::atomic<int> calls{0};
  auto body = [](void* p, int64_t, int64_t) { ++*static_cast<std::atomic<int>*>(p); };
  EXPECT_EQ(dcc_parallel_for(0, 1, body, &calls), DCC_OK);
  EXPECT_EQ(calls.load(), 0);
}

TEST(ParallelFor, HugeRangesDoNotOverflow) {
  // Two chunks near INT64_MAX: the second's end must be n, not wrap around.
  for (int threads : {1, 2}) {
    ThreadCount tc(threads);
    struct Seen {
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> chunks;
    } seen;
    auto body = [](void* p, int64_t begin, int64_t end) {
      auto& s = *static_cast<Seen*>(p);
      std::lock_guard<std::mutex> lock(s.m);
      s.chunks.emplace_back(begin, end);
    };
    const int64_t n = std::numeric_limits<int64_t>::max();
    const int64_t grain = n / 2 + 1;
    ASSERT_EQ(dcc_parallel_for(n, grain, body, &seen), DCC_OK);
    std::sort(seen.chunks.begin(), seen.chunks.end());
    ASSERT_EQ(seen.chunks.size(), 2u);
    EXPECT_EQ(seen.chunks[0], std::make_pair(int64_t{0}, grain));
    EXPECT_EQ(seen.chunks[1], std::make_pair(grain, n));
  }
}

TEST(ParallelFor, NumThreads) {
  const int saved = dcc_get_num_threads();
  EXPECT_GE(saved, 1);
  dcc_set_num_threads(3);
  EXPECT_EQ(dcc_get_num_threads(), 3);
  dcc_set_num_threads(100000);
  EXPECT_EQ(dcc_get_num_threads(), 1024);

  ASSERT_EQ(setenv("DCC_NUM_THREADS", "5", 1), 0);
  dcc_set_num_threads(0);
  EXPECT_EQ(dcc_get_num_threads(), 5);
  ASSERT_EQ(setenv("DCC_NUM_THREADS", "five", 1), 0);
  dcc_set_num_threads(-1);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(dcc_get_num_threads(), std::min(hw, 1024));
  ASSERT_EQ(unsetenv("DCC_NUM_THREADS"), 0);

  // Resizing between loops keeps them correct.
  for (int threads : {2, 6, 1, 3}) {
    dcc_set_num_threads(threads);
    Coverage c(5000, 17);
    ASSERT_EQ(dcc_parallel_for(5000, 17, count_body, &c), DCC_OK);
    ExpectEachIndexOnce(c);
  }
  dcc_set_num_threads(saved);
}

}  // namespace
