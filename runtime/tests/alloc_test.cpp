// dcc_alloc / dcc_free: alignment, empty allocations, overflow and failure,
// reuse of large freed blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>

#include "dccrt.h"

// Let a sanitizer's allocator return NULL for impossible sizes, as the system
// allocator does, instead of aborting the test.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {

TEST(Alloc, AlignedAndWritable) {
  for (size_t bytes :
       {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{4096}, size_t{1} << 20}) {
    void* p = dcc_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    dcc_free(p);
  }
}

TEST(Alloc, ZeroBytesGivesUniquePointers) {
  std::set<void*> seen;
  void* ptrs[4];
  for (void*& p : ptrs) {
    p = dcc_alloc(0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 4u);
  for (void* p : ptrs) dcc_free(p);
}

TEST(Alloc, FreeNullIsANoOp) { dcc_free(nullptr); }

TEST(Alloc, RoundingOverflow) {
  dcc_clear_error();
  EXPECT_EQ(dcc_alloc(std::numeric_limits<size_t>::max()), nullptr);
  EXPECT_EQ(dcc_last_status(), DCC_ERR_OVERFLOW);
  EXPECT_NE(std::strstr(dcc_last_error(), "dcc_alloc:"), nullptr) << dcc_last_error();
}

TEST(Alloc, OutOfMemory) {
  for (size_t bytes : {size_t{std::numeric_limits<ptrdiff_t>::max()}, size_t{1} << 62}) {
    dcc_clear_error();
    EXPECT_EQ(dcc_alloc(bytes), nullptr) << bytes;
    EXPECT_EQ(dcc_last_status(), DCC_ERR_OUT_OF_MEMORY) << bytes;
    EXPECT_NE(std::strstr(dcc_last_error(), "out of memory"), nullptr) << dcc_last_error();
  }
}

TEST(Alloc, LargeFreedBlockIsReusedForARequestItFits) {
  dcc_alloc_trim();
  const size_t mib = size_t{1} << 20;
  void* p = dcc_alloc(8 * mib);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x5a, 8 * mib);
  dcc_free(p);
  EXPECT_EQ(dcc_alloc_kept_bytes(), 8 * mib);
  // Too small a request for it (more than half wasted): a new block.
  void* small = dcc_alloc(3 * mib);
  ASSERT_NE(small, nullptr);
  EXPECT_NE(small, p);
  EXPECT_EQ(dcc_alloc_kept_bytes(), 8 * mib);
  // A request it fits: the same block, aligned and writable.
  void* q = dcc_alloc(5 * mib);
  EXPECT_EQ(q, p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  EXPECT_EQ(dcc_alloc_kept_bytes(), 0u);
  std::memset(q, 0, 5 * mib);
  dcc_free(q);
  dcc_free(small);
  EXPECT_EQ(dcc_alloc_kept_bytes(), 11 * mib);
  dcc_alloc_trim();
  EXPECT_EQ(dcc_alloc_kept_bytes(), 0u);
}

TEST(Alloc, SmallBlocksAndBlocksOverTheBudgetAreNotKept) {
  dcc_alloc_trim();
  void* p = dcc_alloc(4096);
  ASSERT_NE(p, nullptr);
  dcc_free(p);
  EXPECT_EQ(dcc_alloc_kept_bytes(), 0u);
  // Two blocks of 600 MiB: the budget (1 GiB) keeps only the newer one.
  const size_t big = size_t{600} << 20;
  void* a = dcc_alloc(big);
  void* b = dcc_alloc(big);
  if (a == nullptr || b == nullptr) {
    dcc_free(a);
    dcc_free(b);
    dcc_alloc_trim();
    GTEST_SKIP() << "cannot allocate 1.2 GB here";
  }
  dcc_free(a);
  dcc_free(b);
  EXPECT_EQ(dcc_alloc_kept_bytes(), big);
  EXPECT_EQ(dcc_alloc(big), b);
  dcc_free(b);
  dcc_alloc_trim();
}

}  // namespace
