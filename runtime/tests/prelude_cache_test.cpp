// The prelude cache: hits and misses, full-key comparison, alignment, LRU
// eviction, failing and recursive computations, and concurrent requests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dccrt.h"

namespace {

using ::testing::StrEq;

// Offsets from lengths, the simplest real prelude, counting its calls.
struct OffsetsPrelude {
  const int32_t* lengths;
  int64_t batch;
  std::atomic<int> calls{0};
  bool saw_nonzero = false;
};

dcc_status compute_offsets(void* ctx, void* out, size_t out_bytes) {
  auto& p = *static_cast<OffsetsPrelude*>(ctx);
  p.calls++;
  const auto* bytes = static_cast<const unsigned char*>(out);
  for (size_t i = 0; i < out_bytes; ++i) p.saw_nonzero |= bytes[i] != 0;
  if (out_bytes != static_cast<size_t>(p.batch + 1) * sizeof(int64_t)) {
    return dcc_set_error(DCC_ERR_SIZE_MISMATCH, "wrong out_bytes");
  }
  return dcc_offsets_from_lengths(p.lengths, p.batch, static_cast<int64_t*>(out));
}

struct Cache {
  explicit Cache(size_t budget) : cache(dcc_prelude_cache_create(budget)) {}
  ~Cache() { dcc_prelude_cache_destroy(cache); }
  dcc_prelude_cache* cache;
  uint64_t hits() const {
    uint64_t h = 0;
    dcc_prelude_cache_stats(cache, &h, nullptr, nullptr);
    return h;
  }
  uint64_t misses() const {
    uint64_t m = 0;
    dcc_prelude_cache_stats(cache, nullptr, &m, nullptr);
    return m;
  }
  size_t bytes() const {
    size_t b = 0;
    dcc_prelude_cache_stats(cache, nullptr, nullptr, &b);
    return b;
  }
};

constexpr uint64_t kOffsetsKind = 0x0ff5e75;

TEST(PreludeCache, MissThenHit) {
  Cache c(0);
  const int32_t lengths[] = {3, 0, 2};
  OffsetsPrelude p{lengths, 3};
  const void* out1 = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, lengths, sizeof lengths, 4 * sizeof(int64_t),
                            compute_offsets, &p, &out1),
            DCC_OK)
      << dcc_last_error();
  ASSERT_NE(out1, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(out1) % 64, 0u);
  const auto* offsets = static_cast<const int64_t*>(out1);
  EXPECT_EQ(std::vector<int64_t>(offsets, offsets + 4), (std::vector<int64_t>{0, 3, 3, 5}));
  EXPECT_FALSE(p.saw_nonzero);  // the buffer is zeroed before compute

  // Equal key bytes at another address hit.
  const int32_t same[] = {3, 0, 2};
  const void* out2 = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, same, sizeof same, 4 * sizeof(int64_t),
                            compute_offsets, &p, &out2),
            DCC_OK);
  EXPECT_EQ(out2, out1);
  EXPECT_EQ(p.calls.load(), 1);
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(c.misses(), 1u);
  EXPECT_EQ(c.bytes(), 4 * sizeof(int64_t));
}

TEST(PreludeCache, KeysAreComparedInFull) {
  Cache c(0);
  const int32_t a[] = {3, 0, 2};
  const int32_t b[] = {3, 0, 3};    // differs in one byte
  const int32_t prefix[] = {3, 0};  // a prefix of a's bytes
  OffsetsPrelude pa{a, 3}, pb{b, 3}, pp{prefix, 2};
  const void *oa = nullptr, *ob = nullptr, *op = nullptr, *oa_kind2 = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, a, sizeof a, 32, compute_offsets, &pa, &oa),
            DCC_OK);
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, b, sizeof b, 32, compute_offsets, &pb, &ob),
            DCC_OK);
  ASSERT_EQ(
      dcc_prelude_get(c.cache, kOffsetsKind, prefix, sizeof prefix, 24, compute_offsets, &pp, &op),
      DCC_OK);
  // The same key for another kind of prelude is another entry.
  ASSERT_EQ(
      dcc_prelude_get(c.cache, kOffsetsKind + 1, a, sizeof a, 32, compute_offsets, &pa, &oa_kind2),
      DCC_OK);
  EXPECT_NE(oa, ob);
  EXPECT_NE(oa, op);
  EXPECT_NE(oa, oa_kind2);
  EXPECT_EQ(static_cast<const int64_t*>(oa)[3], 5);
  EXPECT_EQ(static_cast<const int64_t*>(ob)[3], 6);
  EXPECT_EQ(static_cast<const int64_t*>(op)[2], 3);
  EXPECT_EQ(c.misses(), 4u);
  EXPECT_EQ(c.hits(), 0u);
}

dcc_status fill_bytes(void* ctx, void* out, size_t out_bytes) {
  std::memset(out, *static_cast<int*>(ctx), out_bytes);
  return DCC_OK;
}

TEST(PreludeCache, EmptyKeyAndEmptyBuffer) {
  Cache c(0);
  int value = 9;
  const void* out = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, 1, nullptr, 0, 0, fill_bytes, &value, &out), DCC_OK);
  EXPECT_NE(out, nullptr);
  const void* again = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, 1, nullptr, 0, 0, fill_bytes, &value, &again), DCC_OK);
  EXPECT_EQ(again, out);
}

// Gets a 1 KiB entry whose key is `i`, filled with the byte `i`.
const unsigned char* Get1K(dcc_prelude_cache* cache, int i, int* computed) {
  struct Ctx {
    int i;
    int* computed;
  } ctx{i, computed};
  auto compute = [](void* p, void* out, size_t n) -> dcc_status {
    auto& x = *static_cast<Ctx*>(p);
    ++*x.computed;
    std::memset(out, x.i, n);
    return DCC_OK;
  };
  const void* out = nullptr;
  EXPECT_EQ(dcc_prelude_get(cache, 7, &i, sizeof i, 1024, compute, &ctx, &out), DCC_OK)
      << dcc_last_error();
  return static_cast<const unsigned char*>(out);
}

TEST(PreludeCache, LeastRecentlyUsedIsEvicted) {
  Cache c(3 * 1024);
  int computed = 0;
  Get1K(c.cache, 1, &computed);
  Get1K(c.cache, 2, &computed);
  Get1K(c.cache, 3, &computed);
  EXPECT_EQ(computed, 3);
  EXPECT_EQ(c.bytes(), 3u * 1024);
  Get1K(c.cache, 1, &computed);  // 1 is now the most recent; 2 the least
  EXPECT_EQ(computed, 3);
  const unsigned char* four = Get1K(c.cache, 4, &computed);  // evicts 2
  EXPECT_EQ(computed, 4);
  EXPECT_EQ(four[1023], 4);
  EXPECT_EQ(c.bytes(), 3u * 1024);
  Get1K(c.cache, 1, &computed);
  Get1K(c.cache, 3, &computed);
  Get1K(c.cache, 4, &computed);
  EXPECT_EQ(computed, 4);                                   // 1, 3, 4 are still cached
  const unsigned char* two = Get1K(c.cache, 2, &computed);  // 2 was evicted: recomputed
  EXPECT_EQ(computed, 5);
  EXPECT_EQ(two[0], 2);
  EXPECT_EQ(c.misses(), 5u);
  EXPECT_EQ(c.hits(), 4u);
}

TEST(PreludeCache, EntryLargerThanBudgetIsReturnedThenEvicted) {
  Cache c(512);
  int computed = 0;
  const unsigned char* big = Get1K(c.cache, 1, &computed);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big[1023], 1);  // still valid: the entry just returned is never evicted
  EXPECT_EQ(c.bytes(), 1024u);
  Get1K(c.cache, 2, &computed);  // evicts 1 (and keeps 2 although over budget)
  EXPECT_EQ(c.bytes(), 1024u);
  Get1K(c.cache, 1, &computed);
  EXPECT_EQ(computed, 3);
}

TEST(PreludeCache, UnlimitedBudgetNeverEvicts) {
  Cache c(0);
  int computed = 0;
  for (int i = 0; i < 100; ++i) Get1K(c.cache, i, &computed);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Get1K(c.cache, i, &computed)[5], i);
  EXPECT_EQ(computed, 100);
  EXPECT_EQ(c.bytes(), 100u * 1024);
}

TEST(PreludeCache, Clear) {
  Cache c(0);
  int computed = 0;
  Get1K(c.cache, 1, &computed);
  Get1K(c.cache, 2, &computed);
  ASSERT_EQ(dcc_prelude_cache_clear(c.cache), DCC_OK);
  EXPECT_EQ(c.bytes(), 0u);
  Get1K(c.cache, 1, &computed);
  EXPECT_EQ(computed, 3);
}

TEST(PreludeCache, SizeMismatchForAnExistingEntry) {
  Cache c(0);
  int value = 1;
  const void* out = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, 42, "key", 3, 128, fill_bytes, &value, &out), DCC_OK);
  const void* other = &value;
  EXPECT_EQ(dcc_prelude_get(c.cache, 42, "key", 3, 256, fill_bytes, &value, &other),
            DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_prelude_get: the prelude of kind 0x2a for this key is "
                                      "cached with 128 bytes, but 256 were asked for"));
  EXPECT_EQ(other, &value);  // *out untouched
}

TEST(PreludeCache, FailingComputationIsNotCached) {
  Cache c(0);
  int calls = 0;
  auto failing = [](void* p, void*, size_t) -> dcc_status {
    ++*static_cast<int*>(p);
    return dcc_set_error(DCC_ERR_SIZE_MISMATCH, "lengths disagree with B");
  };
  auto silent = [](void* p, void*, size_t) -> dcc_status {
    ++*static_cast<int*>(p);
    return DCC_ERR_CUDA;  // without recording a message
  };
  auto throwing = [](void* p, void*, size_t) -> dcc_status {
    ++*static_cast<int*>(p);
    throw std::runtime_error("boom");
  };
  const void* out = &calls;
  EXPECT_EQ(dcc_prelude_get(c.cache, 5, "k", 1, 8, failing, &calls, &out), DCC_ERR_SIZE_MISMATCH);
  EXPECT_STREQ(dcc_last_error(), "lengths disagree with B");  // compute's message is kept
  EXPECT_EQ(dcc_prelude_get(c.cache, 5, "k", 1, 8, silent, &calls, &out), DCC_ERR_CUDA);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_prelude_get: computing the prelude of kind 0x5 failed with DCC_ERR_CUDA");
  EXPECT_EQ(dcc_prelude_get(c.cache, 5, "k", 1, 8, throwing, &calls, &out), DCC_ERR_INTERNAL);
  EXPECT_STREQ(dcc_last_error(), "dcc_prelude_get: C++ exception: boom");
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(out, &calls);
  EXPECT_EQ(c.bytes(), 0u);
  int value = 3;
  ASSERT_EQ(dcc_prelude_get(c.cache, 5, "k", 1, 8, fill_bytes, &value, &out), DCC_OK);
  EXPECT_EQ(static_cast<const unsigned char*>(out)[7], 3);
}

struct Recursive {
  dcc_prelude_cache* cache;
  uint64_t inner_kind;
  dcc_status inner_status = DCC_OK;
  const void* inner_out = nullptr;
};

dcc_status compute_recursive(void* ctx, void* out, size_t) {
  auto& r = *static_cast<Recursive*>(ctx);
  int value = 4;
  r.inner_status =
      dcc_prelude_get(r.cache, r.inner_kind, "same", 4, 16, fill_bytes, &value, &r.inner_out);
  static_cast<unsigned char*>(out)[0] = 1;
  return DCC_OK;
}

TEST(PreludeCache, ComputeMayUseOtherEntriesButNotItself) {
  Cache c(0);
  // A prelude built from another one (fusion maps from offsets, say).
  Recursive ok{c.cache, 2};
  const void* out = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, 1, "same", 4, 16, compute_recursive, &ok, &out), DCC_OK);
  EXPECT_EQ(ok.inner_status, DCC_OK);
  EXPECT_EQ(static_cast<const unsigned char*>(ok.inner_out)[15], 4);

  Recursive self{c.cache, 3};
  // Kind 3 asking for kind 3 with the same key: an error, not a deadlock.
  ASSERT_EQ(dcc_prelude_get(c.cache, 3, "same", 4, 16, compute_recursive, &self, &out), DCC_OK);
  EXPECT_EQ(self.inner_status, DCC_ERR_INVALID_ARGUMENT);
}

TEST(PreludeCache, NullArguments) {
  Cache c(0);
  int value = 0;
  const void* out = nullptr;
  EXPECT_EQ(dcc_prelude_get(nullptr, 1, "k", 1, 8, fill_bytes, &value, &out), DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_prelude_get: cache is NULL");
  EXPECT_EQ(dcc_prelude_get(c.cache, 1, nullptr, 4, 8, fill_bytes, &value, &out),
            DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_prelude_get: key is NULL but key_bytes is 4");
  EXPECT_EQ(dcc_prelude_get(c.cache, 1, "k", 1, 8, nullptr, &value, &out), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_get(c.cache, 1, "k", 1, 8, fill_bytes, &value, nullptr),
            DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_cache_stats(nullptr, nullptr, nullptr, nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_cache_clear(nullptr), DCC_ERR_NULL_POINTER);
  dcc_prelude_cache_destroy(nullptr);
}

TEST(PreludeCache, DefaultCache) {
  dcc_prelude_cache* d = dcc_default_prelude_cache();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(dcc_default_prelude_cache(), d);
  dcc_prelude_cache_destroy(d);  // ignored
  int value = 6;
  const void* out = nullptr;
  ASSERT_EQ(dcc_prelude_get(d, 0xdefa, "x", 1, 64, fill_bytes, &value, &out), DCC_OK);
  EXPECT_EQ(static_cast<const unsigned char*>(out)[63], 6);
}

// Many threads asking for the same and for different keys: each key is
// computed once, everyone gets the same buffer with the right contents.
TEST(PreludeCache, ConcurrentRequests) {
  Cache c(0);
  constexpr int kThreads = 8, kKeys = 16, kRounds = 200;
  std::vector<std::vector<int32_t>> keys;
  for (int k = 0; k < kKeys; ++k) keys.push_back({k, 0, k * 3, 1, k % 5});
  struct Ctx {
    const std::vector<int32_t>* lengths;
    std::atomic<int>* calls;
  };
  std::vector<std::atomic<int>> calls(kKeys);
  auto compute = [](void* p, void* out, size_t) -> dcc_status {
    auto& x = *static_cast<Ctx*>(p);
    x.calls->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // widen the race
    return dcc_offsets_from_lengths(x.lengths->data(), 5, static_cast<int64_t*>(out));
  };
  std::vector<std::vector<const void*>> seen(kThreads, std::vector<const void*>(kKeys));
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const int k = (r * 7 + t * 3) % kKeys;
        Ctx ctx{&keys[k], &calls[k]};
        const void* out = nullptr;
        if (dcc_prelude_get(c.cache, kOffsetsKind, keys[k].data(), 5 * sizeof(int32_t),
                            6 * sizeof(int64_t), compute, &ctx, &out) != DCC_OK) {
          errors++;
          continue;
        }
        const auto* off = static_cast<const int64_t*>(out);
        const int64_t expect_last = k + 0 + k * 3 + 1 + k % 5;
        if (off[0] != 0 || off[5] != expect_last) errors++;
        if (seen[t][k] == nullptr) seen[t][k] = out;
        if (seen[t][k] != out) errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(calls[k].load(), 1) << k;
    for (int t = 1; t < kThreads; ++t) {
      if (seen[t][k] && seen[0][k]) {
        EXPECT_EQ(seen[t][k], seen[0][k]);
      }
    }
  }
  EXPECT_EQ(c.misses(), static_cast<uint64_t>(kKeys));
  EXPECT_EQ(c.hits() + c.misses(), static_cast<uint64_t>(kThreads * kRounds));
}

// Under a tight budget, concurrent requests evict each other's entries. The
// buffers are not read here (an evicted pointer dangles, as documented); the
// cache must stay consistent: bounded bytes, correct counts, no deadlock.
TEST(PreludeCache, ConcurrentEviction) {
  Cache c(4 * 1024);
  constexpr int kThreads = 6, kRounds = 500;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        int key = (r * 13 + t) % 12;
        const void* out = nullptr;
        if (dcc_prelude_get(c.cache, 9, &key, sizeof key, 1024, fill_bytes, &key, &out) != DCC_OK) {
          errors++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_LE(c.bytes(), 4u * 1024);
  EXPECT_EQ(c.hits() + c.misses(), static_cast<uint64_t>(kThreads * kRounds));
}

}  // namespace

// ---- release callbacks and held preludes -----------------------------------

// Counts releases per buffer address, as a device-copy release would free them.
std::mutex g_release_mutex;
std::map<const void*, int> g_released;

void count_release(void* buffer, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_release_mutex);
  EXPECT_EQ(bytes, 4 * sizeof(int64_t));
  g_released[buffer]++;
}

int released(const void* p) {
  std::lock_guard<std::mutex> lock(g_release_mutex);
  auto it = g_released.find(p);
  return it == g_released.end() ? 0 : it->second;
}

TEST(PreludeCache, ReleaseRunsOnceOnClearEvictionAndDestroy) {
  const int32_t a[] = {1, 2, 3}, b[] = {4, 5, 6};
  OffsetsPrelude pa{a, 3}, pb{b, 3};
  const void* out_a = nullptr;
  const void* out_b = nullptr;
  {
    // Budget of one entry: getting b evicts a, releasing it.
    Cache c(4 * sizeof(int64_t));
    ASSERT_EQ(dcc_prelude_get_ex(c.cache, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets,
                                 count_release, &pa, &out_a),
              DCC_OK);
    EXPECT_EQ(released(out_a), 0);
    ASSERT_EQ(dcc_prelude_get_ex(c.cache, kOffsetsKind, b, sizeof b, 4 * sizeof(int64_t), compute_offsets,
                                 count_release, &pb, &out_b),
              DCC_OK);
    EXPECT_EQ(released(out_a), 1);
    EXPECT_EQ(released(out_b), 0);
  }  // destroy releases b
  EXPECT_EQ(released(out_b), 1);

  Cache c(0);
  const void* out = nullptr;
  ASSERT_EQ(dcc_prelude_get_ex(c.cache, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets,
                               count_release, &pa, &out),
            DCC_OK);
  const int before = released(out);
  ASSERT_EQ(dcc_prelude_cache_clear(c.cache), DCC_OK);
  EXPECT_EQ(released(out), before + 1);
}

TEST(PreludeCache, DropRemovesOnlyEntriesWithThatRelease) {
  Cache c(0);
  const int32_t a[] = {1, 2, 3}, b[] = {4, 5, 6};
  OffsetsPrelude pa{a, 3}, pb{b, 3};
  const void* out_a = nullptr;
  const void* out_b = nullptr;
  ASSERT_EQ(dcc_prelude_get_ex(c.cache, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets,
                               count_release, &pa, &out_a),
            DCC_OK);
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, b, sizeof b, 4 * sizeof(int64_t), compute_offsets, &pb, &out_b),
            DCC_OK);
  const int before = released(out_a);
  ASSERT_EQ(dcc_prelude_cache_drop(c.cache, count_release), DCC_OK);
  EXPECT_EQ(released(out_a), before + 1);
  EXPECT_EQ(c.bytes(), 4 * sizeof(int64_t));  // b stays
  const void* again = nullptr;
  ASSERT_EQ(dcc_prelude_get(c.cache, kOffsetsKind, b, sizeof b, 4 * sizeof(int64_t), compute_offsets, &pb, &again),
            DCC_OK);
  EXPECT_EQ(again, out_b);
  EXPECT_EQ(pb.calls.load(), 1);
  EXPECT_EQ(dcc_prelude_cache_drop(nullptr, count_release), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_cache_drop(c.cache, nullptr), DCC_ERR_NULL_POINTER);
}

TEST(HeldPrelude, HoldComputesOnceAndFindComparesKeysInFull) {
  dcc_prelude* p = dcc_prelude_create();
  ASSERT_NE(p, nullptr);
  const int32_t a[] = {3, 0, 2};
  OffsetsPrelude pa{a, 3};
  const void* held = nullptr;
  ASSERT_EQ(dcc_prelude_hold(p, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets, nullptr, &pa, &held),
            DCC_OK);
  const void* again = nullptr;
  ASSERT_EQ(dcc_prelude_hold(p, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets, nullptr, &pa, &again),
            DCC_OK);
  EXPECT_EQ(again, held);
  EXPECT_EQ(pa.calls.load(), 1);
  const auto* off = static_cast<const int64_t*>(held);
  EXPECT_EQ(std::vector<int64_t>(off, off + 4), (std::vector<int64_t>{0, 3, 3, 5}));

  // Equal bytes at another address are found; other lengths are a size mismatch.
  const int32_t same[] = {3, 0, 2}, other[] = {3, 0, 3};
  const void* found = nullptr;
  ASSERT_EQ(dcc_prelude_find(p, kOffsetsKind, same, sizeof same, 4 * sizeof(int64_t), &found), DCC_OK);
  EXPECT_EQ(found, held);
  const void* untouched = &found;
  const void* out = untouched;
  EXPECT_EQ(dcc_prelude_find(p, kOffsetsKind, other, sizeof other, 4 * sizeof(int64_t), &out), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), ::testing::HasSubstr("made for other sizes or lengths"));
  EXPECT_EQ(out, untouched);
  // A key that is a prefix of the held one is not it.
  EXPECT_EQ(dcc_prelude_find(p, kOffsetsKind, same, 2 * sizeof(int32_t), 4 * sizeof(int64_t), &out),
            DCC_ERR_SIZE_MISMATCH);
  EXPECT_EQ(dcc_prelude_find(p, kOffsetsKind + 1, same, sizeof same, 4 * sizeof(int64_t), &out),
            DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), ::testing::HasSubstr("holds no arrays of kind"));
  EXPECT_EQ(dcc_prelude_find(p, kOffsetsKind, same, sizeof same, 5 * sizeof(int64_t), &out), DCC_ERR_SIZE_MISMATCH);
  EXPECT_EQ(out, untouched);

  int64_t entries = 0;
  size_t bytes = 0;
  ASSERT_EQ(dcc_prelude_stats(p, &entries, &bytes), DCC_OK);
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(bytes, 4 * sizeof(int64_t));

  // NULL handles and outputs.
  EXPECT_EQ(dcc_prelude_find(nullptr, kOffsetsKind, same, sizeof same, 4 * sizeof(int64_t), &out),
            DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_prelude_find: prelude is NULL"));
  EXPECT_EQ(dcc_prelude_find(p, kOffsetsKind, same, sizeof same, 4 * sizeof(int64_t), nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_hold(nullptr, kOffsetsKind, a, sizeof a, 32, compute_offsets, nullptr, &pa, &out),
            DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_stats(nullptr, &entries, &bytes), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(out, untouched);
  dcc_prelude_destroy(p);
  dcc_prelude_destroy(nullptr);
}

TEST(HeldPrelude, DestroyReleasesItsEntries) {
  dcc_prelude* p = dcc_prelude_create();
  ASSERT_NE(p, nullptr);
  const int32_t a[] = {1, 1, 1};
  OffsetsPrelude pa{a, 3};
  const void* held = nullptr;
  ASSERT_EQ(dcc_prelude_hold(p, kOffsetsKind, a, sizeof a, 4 * sizeof(int64_t), compute_offsets, count_release, &pa,
                             &held),
            DCC_OK);
  const int before = released(held);
  dcc_prelude_destroy(p);
  EXPECT_EQ(released(held), before + 1);
}

// ---- pinned entries (dcc_prelude_acquire / dcc_prelude_unpin) ---------------

namespace {

// A 1 KiB entry whose every 8-byte word is the key times a constant, so a
// reader can tell its own entry from a freed one or another key's.
constexpr size_t kPinnedBytes = 1024;
constexpr uint64_t kPinnedKind = 0x919ed;

uint64_t pattern(int key) { return 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(key + 1); }

dcc_status fill_pattern(void* ctx, void* out, size_t out_bytes) {
  const uint64_t word = pattern(*static_cast<const int*>(ctx));
  auto* w = static_cast<uint64_t*>(out);
  for (size_t i = 0; i < out_bytes / 8; ++i) w[i] = word;
  return DCC_OK;
}

bool holds_pattern(const void* buffer, int key) {
  const auto* w = static_cast<const uint64_t*>(buffer);
  for (size_t i = 0; i < kPinnedBytes / 8; ++i) {
    if (w[i] != pattern(key)) return false;
  }
  return true;
}

std::atomic<int> g_pinned_releases{0};

// Checks that the buffer is still intact when the cache frees it.
void release_pattern(void* buffer, size_t bytes) {
  EXPECT_EQ(bytes, kPinnedBytes);
  const uint64_t first = *static_cast<const uint64_t*>(buffer);
  const auto* w = static_cast<const uint64_t*>(buffer);
  for (size_t i = 0; i < bytes / 8; ++i) EXPECT_EQ(w[i], first);
  g_pinned_releases++;
}

dcc_prelude_pin* Acquire(dcc_prelude_cache* cache, int key, const void** out) {
  dcc_prelude_pin* pin = nullptr;
  EXPECT_EQ(dcc_prelude_acquire(cache, kPinnedKind, &key, sizeof key, kPinnedBytes, fill_pattern,
                                release_pattern, &key, out, &pin),
            DCC_OK)
      << dcc_last_error();
  EXPECT_NE(pin, nullptr);
  return pin;
}

}  // namespace

TEST(PinnedPrelude, PinnedEntriesOutliveEvictionAndTheBudgetComesBack) {
  Cache c(kPinnedBytes);  // one entry
  const void* a = nullptr;
  const void* b = nullptr;
  dcc_prelude_pin* pa = Acquire(c.cache, 1, &a);
  dcc_prelude_pin* pb = Acquire(c.cache, 2, &b);  // over budget, but 1 is pinned
  EXPECT_TRUE(holds_pattern(a, 1));
  EXPECT_TRUE(holds_pattern(b, 2));
  EXPECT_EQ(c.bytes(), 2 * kPinnedBytes);
  // A pinned entry is still found: a second pin of 1 hits.
  const void* a2 = nullptr;
  dcc_prelude_pin* pa2 = Acquire(c.cache, 1, &a2);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(c.misses(), 2u);
  dcc_prelude_unpin(pa);
  EXPECT_EQ(c.bytes(), 2 * kPinnedBytes);  // 1 is still pinned once
  EXPECT_TRUE(holds_pattern(a, 1));
  dcc_prelude_unpin(pa2);  // 1 is the least recently used unpinned entry: evicted
  EXPECT_EQ(c.bytes(), kPinnedBytes);
  EXPECT_TRUE(holds_pattern(b, 2));
  dcc_prelude_unpin(pb);
  EXPECT_EQ(c.bytes(), kPinnedBytes);
  dcc_prelude_unpin(nullptr);  // ignored

  // The unpinned dcc_prelude_get still evicts as before, but not pinned entries.
  dcc_prelude_pin* p3 = Acquire(c.cache, 3, &a);
  int computed = 0;
  Get1K(c.cache, 4, &computed);
  EXPECT_TRUE(holds_pattern(a, 3));
  dcc_prelude_unpin(p3);
  EXPECT_LE(c.bytes(), kPinnedBytes);
}

TEST(PinnedPrelude, ClearAndDropFreePinnedEntriesAtTheLastUnpin) {
  Cache c(0);
  const int before = g_pinned_releases.load();
  const void* a = nullptr;
  const void* b = nullptr;
  dcc_prelude_pin* pa = Acquire(c.cache, 1, &a);
  dcc_prelude_pin* pb = Acquire(c.cache, 2, &b);
  dcc_prelude_pin* pb2 = Acquire(c.cache, 2, &b);
  ASSERT_EQ(dcc_prelude_cache_clear(c.cache), DCC_OK);
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_EQ(g_pinned_releases.load(), before);  // both pinned: not freed yet
  EXPECT_TRUE(holds_pattern(a, 1));
  // A cleared entry is no longer found: asking again computes a new one.
  const void* a_new = nullptr;
  dcc_prelude_pin* pa_new = Acquire(c.cache, 1, &a_new);
  EXPECT_NE(a_new, a);
  EXPECT_EQ(c.misses(), 3u);
  dcc_prelude_unpin(pa);
  EXPECT_EQ(g_pinned_releases.load(), before + 1);
  ASSERT_EQ(dcc_prelude_cache_drop(c.cache, release_pattern), DCC_OK);  // drops the new 1
  EXPECT_EQ(g_pinned_releases.load(), before + 1);
  dcc_prelude_unpin(pa_new);
  EXPECT_EQ(g_pinned_releases.load(), before + 2);
  dcc_prelude_unpin(pb);
  EXPECT_TRUE(holds_pattern(b, 2));
  dcc_prelude_unpin(pb2);
  EXPECT_EQ(g_pinned_releases.load(), before + 3);
}

TEST(PinnedPrelude, NullArguments) {
  Cache c(0);
  int key = 1;
  const void* out = nullptr;
  dcc_prelude_pin* pin = nullptr;
  EXPECT_EQ(dcc_prelude_acquire(nullptr, 1, &key, sizeof key, 8, fill_pattern, nullptr, &key, &out,
                                &pin),
            DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_prelude_acquire(c.cache, 1, &key, sizeof key, 8, fill_pattern, nullptr, &key, &out,
                                nullptr),
            DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_prelude_acquire: pin is NULL"));
  EXPECT_EQ(
      dcc_prelude_acquire(c.cache, 1, &key, sizeof key, 8, nullptr, nullptr, &key, &out, &pin),
      DCC_ERR_NULL_POINTER);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(pin, nullptr);
  EXPECT_EQ(c.misses(), 0u);
}

// The defect of issue 14: 8 threads, each holding the entries of a "call"
// (3 units) while others fill a cache that holds 2 of 24 keys. Every pinned
// buffer must keep its contents until unpinned: without pinning, another
// thread's call frees it (ASan: heap-use-after-free; TSan: a race with the
// free; a plain build: another key's pattern). One thread also clears.
TEST(PinnedPrelude, ConcurrentCallsKeepTheirEntriesUnderATinyBudget) {
  const int before = g_pinned_releases.load();
  uint64_t misses = 0;
  {
    Cache c(2 * kPinnedBytes);
    constexpr int kThreads = 8, kRounds = 300, kKeys = 24, kUnits = 3;
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds; ++r) {
          int keys[kUnits];
          const void* bufs[kUnits] = {};
          dcc_prelude_pin* pins[kUnits] = {};
          for (int u = 0; u < kUnits; ++u) {
            keys[u] = (r * 7 + t * 5 + u * 11) % kKeys;
            if (dcc_prelude_acquire(c.cache, kPinnedKind, &keys[u], sizeof keys[u], kPinnedBytes,
                                    fill_pattern, release_pattern, &keys[u], &bufs[u],
                                    &pins[u]) != DCC_OK) {
              errors++;
            }
          }
          if (t == 0 && r % 50 == 0) dcc_prelude_cache_clear(c.cache);
          for (int pass = 0; pass < 2; ++pass) {
            for (int u = 0; u < kUnits; ++u) {
              if (bufs[u] != nullptr && !holds_pattern(bufs[u], keys[u])) errors++;
            }
            std::this_thread::yield();  // let the others evict meanwhile
          }
          for (int u = kUnits - 1; u >= 0; --u) dcc_prelude_unpin(pins[u]);
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_LE(c.bytes(), 2 * kPinnedBytes);  // nothing pinned: back within budget
    EXPECT_EQ(c.hits() + c.misses(), static_cast<uint64_t>(kThreads * kRounds * kUnits));
    misses = c.misses();
  }
  // Every computed buffer is freed exactly once (eviction, clear or destroy).
  EXPECT_EQ(static_cast<uint64_t>(g_pinned_releases.load() - before), misses);
}
