// Lengths, offsets and cu_seqlens: prefix sums, validation and the guarantee
// that a failing call writes nothing.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "dccrt.h"

namespace {

constexpr int64_t kSentinel64 = 0x5a5a5a5a5a5a5a5a;
constexpr int32_t kSentinel32 = 0x5a5a5a5a;

TEST(Offsets, Basic) {
  const int32_t lengths[] = {3, 0, 2};
  int64_t offsets[4] = {-1, -1, -1, -1};
  ASSERT_EQ(dcc_offsets_from_lengths(lengths, 3, offsets), DCC_OK);
  EXPECT_EQ(std::vector<int64_t>(offsets, offsets + 4), (std::vector<int64_t>{0, 3, 3, 5}));
}

TEST(Offsets, ZeroLengths) {
  const int32_t lengths[] = {0, 0, 0, 0};
  std::vector<int64_t> offsets(5, -1);
  ASSERT_EQ(dcc_offsets_from_lengths(lengths, 4, offsets.data()), DCC_OK);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 0, 0, 0, 0}));
}

TEST(Offsets, SingleSequence) {
  const int32_t lengths[] = {std::numeric_limits<int32_t>::max()};
  int64_t offsets[2] = {-1, -1};
  ASSERT_EQ(dcc_offsets_from_lengths(lengths, 1, offsets), DCC_OK);
  EXPECT_EQ(offsets[0], 0);
  EXPECT_EQ(offsets[1], std::numeric_limits<int32_t>::max());
}

TEST(Offsets, EmptyBatch) {
  int64_t offsets[2] = {-1, kSentinel64};
  ASSERT_EQ(dcc_offsets_from_lengths(nullptr, 0, offsets), DCC_OK);
  EXPECT_EQ(offsets[0], 0);
  EXPECT_EQ(offsets[1], kSentinel64);  // only batch + 1 elements are written
}

TEST(Offsets, LargeTotalIsExact) {
  // Sums beyond int32 are exact in int64.
  const std::vector<int32_t> lengths(5, std::numeric_limits<int32_t>::max());
  std::vector<int64_t> offsets(6);
  ASSERT_EQ(dcc_offsets_from_lengths(lengths.data(), 5, offsets.data()), DCC_OK);
  for (int b = 0; b <= 5; ++b) {
    EXPECT_EQ(offsets[b], int64_t{b} * std::numeric_limits<int32_t>::max());
  }
}

TEST(Offsets, NegativeLengthWritesNothing) {
  const int32_t lengths[] = {4, 1, 0, -2, 5};
  std::vector<int64_t> offsets(6, kSentinel64);
  EXPECT_EQ(dcc_offsets_from_lengths(lengths, 5, offsets.data()), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_offsets_from_lengths: lengths[3] is -2; lengths must be >= 0");
  EXPECT_EQ(offsets, std::vector<int64_t>(6, kSentinel64));
}

TEST(Offsets, FirstNegativeLengthIsNamedInLargeBatches) {
  std::vector<int32_t> lengths(3'000'000, 1);
  lengths[2'500'001] = -9;
  lengths[2'900'000] = -1;
  int64_t total = kSentinel64;
  EXPECT_EQ(dcc_total_length(lengths.data(), static_cast<int64_t>(lengths.size()), &total),
            DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_STREQ(dcc_last_error(), "dcc_total_length: lengths[2500001] is -9; lengths must be >= 0");
  EXPECT_EQ(total, kSentinel64);
}

TEST(Offsets, InvalidArguments) {
  const int32_t lengths[] = {1, 2};
  int64_t offsets[3] = {kSentinel64, kSentinel64, kSentinel64};
  EXPECT_EQ(dcc_offsets_from_lengths(lengths, -1, offsets), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(dcc_last_error(), "dcc_offsets_from_lengths: batch is -1; batch must be >= 0");
  EXPECT_EQ(dcc_offsets_from_lengths(lengths, std::numeric_limits<int64_t>::max(), offsets),
            DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dcc_offsets_from_lengths(nullptr, 2, offsets), DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_offsets_from_lengths: lengths is NULL (batch is 2)");
  EXPECT_EQ(dcc_offsets_from_lengths(lengths, 2, nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_offsets_from_lengths: offsets is NULL");
  for (int64_t o : offsets) EXPECT_EQ(o, kSentinel64);
}

// 2^32 + 3 lengths of INT32_MAX: the running sum first exceeds INT64_MAX at
// index 2^32 + 2. The 16 GiB array is one 1 MiB memfd mapped 16,385 times
// (a chunk that stays in cache: 64 MiB made this test memory-bound, 26 s).
TEST(Offsets, Int64OverflowWritesNothing) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // 4 billion checked reads (32 s under ASan, 3 s without): the sum's
  // overflow check is tested by the unsanitized build; the sanitizers' part,
  // the reads of `lengths`, by every other test of this file.
  GTEST_SKIP() << "4 billion reads: run in the default build";
#endif
  constexpr size_t kChunk = size_t{1} << 20;
  constexpr size_t kMaps = 16385;
  const int64_t batch = (int64_t{1} << 32) + 3;
  ASSERT_LE(static_cast<size_t>(batch) * 4, kChunk * kMaps);

  const int fd = memfd_create("dccrt_lengths", 0);
  if (fd < 0) GTEST_SKIP() << "memfd_create is unavailable";
  ASSERT_EQ(ftruncate(fd, kChunk), 0);
  void* chunk = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(chunk, MAP_FAILED);
  std::fill_n(static_cast<int32_t*>(chunk), kChunk / 4, std::numeric_limits<int32_t>::max());
  munmap(chunk, kChunk);
  void* base =
      mmap(nullptr, kChunk * kMaps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    close(fd);
    GTEST_SKIP() << "cannot reserve 16 GiB of address space";
  }
  for (size_t i = 0; i < kMaps; ++i) {
    void* at = static_cast<char*>(base) + i * kChunk;
    ASSERT_EQ(mmap(at, kChunk, PROT_READ, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0), at);
  }
  const auto* lengths = static_cast<const int32_t*>(base);

  int64_t offsets[4] = {kSentinel64, kSentinel64, kSentinel64, kSentinel64};
  EXPECT_EQ(dcc_offsets_from_lengths(lengths, batch, offsets), DCC_ERR_OVERFLOW);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_offsets_from_lengths: the sum of lengths[0..4294967298] overflows int64 "
               "(lengths[4294967298] is 2147483647)");
  for (int64_t o : offsets) EXPECT_EQ(o, kSentinel64);
  // (The message naming index 2^32 + 2 also shows that the 2^32 + 2 lengths
  // before it, summing to 2^63 - 2, were accepted: no early false alarm.)

  munmap(base, kChunk * kMaps);
  close(fd);
}

TEST(CuSeqlens, RoundTrip) {
  const int32_t lengths[] = {5, 0, 1, 7, 0};
  int32_t cu[6];
  ASSERT_EQ(dcc_cu_seqlens_from_lengths(lengths, 5, cu), DCC_OK);
  EXPECT_EQ(std::vector<int32_t>(cu, cu + 6), (std::vector<int32_t>{0, 5, 5, 6, 13, 13}));

  int32_t back[5];
  ASSERT_EQ(dcc_lengths_from_cu_seqlens(cu, 5, back), DCC_OK);
  EXPECT_EQ(std::vector<int32_t>(back, back + 5), std::vector<int32_t>(lengths, lengths + 5));

  int64_t offsets[6];
  ASSERT_EQ(dcc_offsets_from_cu_seqlens(cu, 5, offsets), DCC_OK);
  int64_t expected[6];
  ASSERT_EQ(dcc_offsets_from_lengths(lengths, 5, expected), DCC_OK);
  EXPECT_EQ(std::vector<int64_t>(offsets, offsets + 6),
            std::vector<int64_t>(expected, expected + 6));
}

TEST(CuSeqlens, EmptyBatch) {
  const int32_t cu[] = {0};
  ASSERT_EQ(dcc_lengths_from_cu_seqlens(cu, 0, nullptr), DCC_OK);
  int64_t offsets[1] = {kSentinel64};
  ASSERT_EQ(dcc_offsets_from_cu_seqlens(cu, 0, offsets), DCC_OK);
  EXPECT_EQ(offsets[0], 0);
  int32_t out[1] = {kSentinel32};
  ASSERT_EQ(dcc_cu_seqlens_from_lengths(nullptr, 0, out), DCC_OK);
  EXPECT_EQ(out[0], 0);
}

TEST(CuSeqlens, MustStartAtZeroAndNotDecrease) {
  int32_t lengths[3] = {kSentinel32, kSentinel32, kSentinel32};
  const int32_t not_zero[] = {1, 2, 3, 4};
  EXPECT_EQ(dcc_lengths_from_cu_seqlens(not_zero, 3, lengths), DCC_ERR_SIZE_MISMATCH);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_lengths_from_cu_seqlens: cu_seqlens[0] is 1; cu_seqlens must start at 0");
  const int32_t decreasing[] = {0, 4, 3, 9};
  EXPECT_EQ(dcc_lengths_from_cu_seqlens(decreasing, 3, lengths), DCC_ERR_SIZE_MISMATCH);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_lengths_from_cu_seqlens: cu_seqlens[2] is 3 but cu_seqlens[1] is 4; "
               "cu_seqlens must be non-decreasing");
  for (int32_t l : lengths) EXPECT_EQ(l, kSentinel32);

  int64_t offsets[4] = {kSentinel64, kSentinel64, kSentinel64, kSentinel64};
  EXPECT_EQ(dcc_offsets_from_cu_seqlens(decreasing, 3, offsets), DCC_ERR_SIZE_MISMATCH);
  EXPECT_EQ(dcc_offsets_from_cu_seqlens(nullptr, 3, offsets), DCC_ERR_NULL_POINTER);
  for (int64_t o : offsets) EXPECT_EQ(o, kSentinel64);

  EXPECT_EQ(dcc_lengths_from_cu_seqlens(nullptr, 0, nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_STREQ(dcc_last_error(), "dcc_lengths_from_cu_seqlens: cu_seqlens is NULL");
  const int32_t ok[] = {0, 1};
  EXPECT_EQ(dcc_lengths_from_cu_seqlens(ok, 1, nullptr), DCC_ERR_NULL_POINTER);
}

TEST(CuSeqlens, Int32OverflowWritesNothing) {
  const int32_t lengths[] = {std::numeric_limits<int32_t>::max(), 1};
  int32_t cu[3] = {kSentinel32, kSentinel32, kSentinel32};
  EXPECT_EQ(dcc_cu_seqlens_from_lengths(lengths, 2, cu), DCC_ERR_OVERFLOW);
  EXPECT_STREQ(dcc_last_error(),
               "dcc_cu_seqlens_from_lengths: the total length is 2147483648, more than "
               "cu_seqlens (int32) can hold");
  for (int32_t c : cu) EXPECT_EQ(c, kSentinel32);
}

TEST(TotalLength, Basic) {
  const int32_t lengths[] = {3, 0, 2};
  int64_t total = -1;
  ASSERT_EQ(dcc_total_length(lengths, 3, &total), DCC_OK);
  EXPECT_EQ(total, 5);
  ASSERT_EQ(dcc_total_length(nullptr, 0, &total), DCC_OK);
  EXPECT_EQ(total, 0);
  EXPECT_EQ(dcc_total_length(lengths, 3, nullptr), DCC_ERR_NULL_POINTER);
}

}  // namespace
