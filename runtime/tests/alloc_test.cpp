// dcc_alloc / dcc_free: alignment, empty allocations, overflow and failure.
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

}  // namespace
