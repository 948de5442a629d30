// Packing and unpacking: round trips against hand-built buffers, padded
// buffers with fill, large (thread pool) copies, and every error path leaving
// every output byte unchanged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "dccrt.h"

namespace {

using ::testing::StrEq;

constexpr float kSentinel = -12345.0f;

// The example of the README: lengths {2, 0, 3}, rows of two floats.
struct Example {
  std::vector<float> seq0{1, 2, 3, 4};
  std::vector<float> seq2{5, 6, 7, 8, 9, 10};
  std::vector<int32_t> lengths{2, 0, 3};
  // sequences[1] is empty and may be NULL.
  std::vector<const void*> sequences{seq0.data(), nullptr, seq2.data()};
  std::vector<float> packed_expected{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
};

TEST(Pack, HandBuiltExample) {
  Example ex;
  std::vector<float> packed(14, kSentinel);  // room for 7 rows, 5 used
  ASSERT_EQ(dcc_pack(ex.sequences.data(), ex.lengths.data(), 3, 2, sizeof(float), packed.data(), 7),
            DCC_OK)
      << dcc_last_error();
  std::vector<float> expected = ex.packed_expected;
  expected.resize(14, kSentinel);  // rows past the total are untouched
  EXPECT_EQ(packed, expected);
}

TEST(Unpack, HandBuiltExample) {
  Example ex;
  std::vector<float> out0(4, kSentinel), out2(6, kSentinel);
  void* outs[] = {out0.data(), nullptr, out2.data()};
  ASSERT_EQ(dcc_unpack(outs, ex.lengths.data(), 3, 2, sizeof(float), ex.packed_expected.data(), 5),
            DCC_OK)
      << dcc_last_error();
  EXPECT_EQ(out0, ex.seq0);
  EXPECT_EQ(out2, ex.seq2);
}

TEST(Pack, EmptyBatchAndEmptySequencesAcceptNull) {
  EXPECT_EQ(dcc_pack(nullptr, nullptr, 0, 4, 4, nullptr, 0), DCC_OK);
  EXPECT_EQ(dcc_unpack(nullptr, nullptr, 0, 4, 4, nullptr, 0), DCC_OK);
  const int32_t zeros[] = {0, 0};
  const void* seqs[] = {nullptr, nullptr};
  void* outs[] = {nullptr, nullptr};
  EXPECT_EQ(dcc_pack(seqs, zeros, 2, 4, 4, nullptr, 0), DCC_OK);
  EXPECT_EQ(dcc_unpack(outs, zeros, 2, 4, 4, nullptr, 0), DCC_OK);
  EXPECT_EQ(dcc_pack_padded(nullptr, 0, 5, nullptr, 4, 4, nullptr, 0), DCC_OK);
  EXPECT_EQ(dcc_pack_padded(nullptr, 2, 0, zeros, 4, 4, nullptr, 0), DCC_OK);
  EXPECT_EQ(dcc_unpack_padded(nullptr, 2, 0, zeros, 4, 4, nullptr, 0, nullptr), DCC_OK);
}

TEST(PackPadded, HandBuiltExample) {
  Example ex;
  const float F = -1;
  // [batch 3, max_len 3, row 2]; F marks padding the packer must skip.
  const std::vector<float> padded{1, 2, 3, 4, F, F,  //
                                  F, F, F, F, F, F,  //
                                  5, 6, 7, 8, 9, 10};
  std::vector<float> packed(10, kSentinel);
  ASSERT_EQ(
      dcc_pack_padded(padded.data(), 3, 3, ex.lengths.data(), 2, sizeof(float), packed.data(), 5),
      DCC_OK)
      << dcc_last_error();
  EXPECT_EQ(packed, ex.packed_expected);

  std::vector<float> back(padded.size(), kSentinel);
  const float fill = -1;
  ASSERT_EQ(dcc_unpack_padded(back.data(), 3, 3, ex.lengths.data(), 2, sizeof(float), packed.data(),
                              5, &fill),
            DCC_OK)
      << dcc_last_error();
  EXPECT_EQ(back, padded);

  // A NULL fill writes zero bytes into the padding.
  ASSERT_EQ(dcc_unpack_padded(back.data(), 3, 3, ex.lengths.data(), 2, sizeof(float), packed.data(),
                              5, nullptr),
            DCC_OK);
  EXPECT_EQ(back, (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6, 7, 8, 9, 10}));
}

TEST(PackPadded, OddElementSizeFill) {
  // 3-byte elements, rows of 5 of them: the fill pattern repeats every 3 bytes.
  const int32_t lengths[] = {1, 0};
  const int64_t max_len = 3, row = 5;
  const size_t es = 3, rb = row * es;
  std::vector<uint8_t> packed(rb);
  std::iota(packed.begin(), packed.end(), uint8_t{100});
  std::vector<uint8_t> padded(2 * max_len * rb, 0xee);
  const uint8_t fill[3] = {1, 2, 3};
  ASSERT_EQ(dcc_unpack_padded(padded.data(), 2, max_len, lengths, row, es, packed.data(), 1, fill),
            DCC_OK)
      << dcc_last_error();
  for (size_t i = 0; i < rb; ++i) EXPECT_EQ(padded[i], packed[i]) << i;
  for (size_t i = rb; i < padded.size(); ++i) EXPECT_EQ(padded[i], fill[(i - rb) % 3]) << i;
}

// Large batches go through the thread pool; the result must equal a plain
// serial copy, including one very long sequence and empty ones.
TEST(Pack, LargeRoundTripMatchesSerialCopy) {
  const int saved = dcc_get_num_threads();
  dcc_set_num_threads(4);
  const std::vector<int32_t> lengths{0, 150000, 3, 0, 1, 40000, 0, 7777, 1};
  const int64_t row = 16, batch = static_cast<int64_t>(lengths.size());
  std::mt19937 rng(7);
  std::vector<std::vector<float>> seqs;
  std::vector<const void*> ptrs;
  std::vector<float> expected;
  for (int32_t len : lengths) {
    seqs.emplace_back(static_cast<size_t>(len) * row);
    for (float& x : seqs.back()) x = static_cast<float>(rng());
    expected.insert(expected.end(), seqs.back().begin(), seqs.back().end());
    ptrs.push_back(len ? seqs.back().data() : nullptr);
  }
  const int64_t total = static_cast<int64_t>(expected.size()) / row;
  std::vector<float> packed(expected.size(), kSentinel);
  ASSERT_EQ(dcc_pack(ptrs.data(), lengths.data(), batch, row, sizeof(float), packed.data(), total),
            DCC_OK);
  EXPECT_TRUE(packed == expected);

  std::vector<std::vector<float>> outs;
  std::vector<void*> out_ptrs;
  for (int32_t len : lengths) {
    outs.emplace_back(static_cast<size_t>(len) * row, kSentinel);
    out_ptrs.push_back(outs.back().data());
  }
  ASSERT_EQ(
      dcc_unpack(out_ptrs.data(), lengths.data(), batch, row, sizeof(float), packed.data(), total),
      DCC_OK);
  EXPECT_TRUE(outs == seqs);

  // The same through a padded buffer.
  const int64_t max_len = 150000;
  std::vector<float> padded(static_cast<size_t>(batch * max_len * row), kSentinel);
  const float fill = 0.5f;
  ASSERT_EQ(dcc_unpack_padded(padded.data(), batch, max_len, lengths.data(), row, sizeof(float),
                              packed.data(), total, &fill),
            DCC_OK);
  for (int64_t b = 0; b < batch; ++b) {
    const float* p = padded.data() + b * max_len * row;
    const size_t n = seqs[b].size();
    ASSERT_TRUE(std::equal(seqs[b].begin(), seqs[b].end(), p)) << b;
    ASSERT_TRUE(std::all_of(p + n, p + max_len * row, [&](float x) { return x == fill; })) << b;
  }
  std::vector<float> repacked(expected.size(), kSentinel);
  ASSERT_EQ(dcc_pack_padded(padded.data(), batch, max_len, lengths.data(), row, sizeof(float),
                            repacked.data(), total),
            DCC_OK);
  EXPECT_TRUE(repacked == expected);
  dcc_set_num_threads(saved);
}

// ---------------------------------------------------------------------------
// Error paths: every case starts from a valid call, changes one thing, and
// checks the status, the exact message, and that no output byte changed.

class PackErrors : public ::testing::Test {
 protected:
  Example ex;
  std::vector<float> packed = std::vector<float>(12, kSentinel);  // 6 rows
  std::vector<float> out0 = std::vector<float>(4, kSentinel);
  std::vector<float> out2 = std::vector<float>(6, kSentinel);
  std::vector<float> padded = std::vector<float>(18, kSentinel);  // [3, 3, 2]
  const float fill = 7;

  void ExpectUntouched() {
    EXPECT_EQ(packed, std::vector<float>(12, kSentinel));
    EXPECT_EQ(out0, std::vector<float>(4, kSentinel));
    EXPECT_EQ(out2, std::vector<float>(6, kSentinel));
    EXPECT_EQ(padded, std::vector<float>(18, kSentinel));
  }

  dcc_status Pack(const int32_t* lengths, int64_t batch = 3, int64_t row = 2,
                  size_t es = sizeof(float), int64_t cap = 6, bool null_seqs = false,
                  bool null_packed = false) {
    return dcc_pack(null_seqs ? nullptr : ex.sequences.data(), lengths, batch, row, es,
                    null_packed ? nullptr : packed.data(), cap);
  }
  dcc_status Unpack(const int32_t* lengths, int64_t batch = 3, int64_t rows = 5,
                    void* const* outs = nullptr, const void* src = nullptr) {
    void* const default_outs[] = {out0.data(), nullptr, out2.data()};
    return dcc_unpack(outs ? outs : default_outs, lengths, batch, 2, sizeof(float),
                      src ? src : ex.packed_expected.data(), rows);
  }
};

TEST_F(PackErrors, Pack) {
  const int32_t* L = ex.lengths.data();
  EXPECT_EQ(Pack(L, -1), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: batch is -1; batch must be >= 0"));
  EXPECT_EQ(Pack(L, 3, 0), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: row_elems is 0; row_elems must be > 0"));
  EXPECT_EQ(Pack(L, 3, -3), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: row_elems is -3; row_elems must be > 0"));
  EXPECT_EQ(Pack(L, 3, 2, 0), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: elem_size is 0; elem_size must be > 0"));
  EXPECT_EQ(Pack(L, 3, std::numeric_limits<int64_t>::max(), 4), DCC_ERR_OVERFLOW);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: a row of 9223372036854775807 elements of 4 "
                                      "bytes overflows the address space"));
  EXPECT_EQ(Pack(L, 3, 2, 4, -1), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: packed_capacity_rows is -1; it must be >= 0"));
  EXPECT_EQ(Pack(L, 3, 2, 4, 6, /*null_seqs=*/true), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: sequences is NULL (batch is 3)"));
  EXPECT_EQ(Pack(nullptr), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: lengths is NULL (batch is 3)"));
  const int32_t negative[] = {2, 0, -2};
  EXPECT_EQ(Pack(negative), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: lengths[2] is -2; lengths must be >= 0"));
  EXPECT_EQ(Pack(L, 3, 2, 4, 4), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: the lengths add up to 5 rows but the packed "
                                      "buffer holds 4 (packed_capacity_rows is 4)"));
  EXPECT_EQ(Pack(L, 3, 2, 4, 6, false, /*null_packed=*/true), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: packed is NULL (the lengths add up to 5 rows)"));
  const int32_t needs_seq1[] = {2, 1, 3};
  EXPECT_EQ(Pack(needs_seq1), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: sequences[1] is NULL but lengths[1] is 1"));
  const int32_t huge[] = {std::numeric_limits<int32_t>::max(), 0, 0};
  EXPECT_EQ(Pack(huge, 3, int64_t{1} << 40, 8, std::numeric_limits<int64_t>::max()),
            DCC_ERR_OVERFLOW);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_pack: the packed buffer of 2147483647 rows of 8796093022208 bytes "
                    "overflows the address space"));
  // A source that lies inside the destination.
  const void* overlapping[] = {packed.data() + 4, nullptr, ex.seq2.data()};
  EXPECT_EQ(dcc_pack(overlapping, L, 3, 2, 4, packed.data(), 6), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack: sequences[0] overlaps the packed buffer"));
  ExpectUntouched();
}

TEST_F(PackErrors, Unpack) {
  const int32_t* L = ex.lengths.data();
  EXPECT_EQ(Unpack(L, -2), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: batch is -2; batch must be >= 0"));
  EXPECT_EQ(Unpack(L, 3, -1), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: packed_rows is -1; it must be >= 0"));
  EXPECT_EQ(Unpack(L, 3, 4), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: the lengths add up to 5 rows but the packed "
                                      "buffer holds 4 (packed_rows is 4)"));
  const int32_t negative[] = {-1, 0, 3};
  EXPECT_EQ(Unpack(negative), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: lengths[0] is -1; lengths must be >= 0"));
  const int32_t needs_seq1[] = {2, 1, 2};
  EXPECT_EQ(Unpack(needs_seq1), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: sequences[1] is NULL but lengths[1] is 1"));
  EXPECT_EQ(dcc_unpack(nullptr, L, 3, 2, 4, ex.packed_expected.data(), 5), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(dcc_unpack(nullptr, nullptr, 3, 2, 4, nullptr, 5), DCC_ERR_NULL_POINTER);
  void* const outs[] = {out0.data(), nullptr, out2.data()};
  EXPECT_EQ(dcc_unpack(outs, L, 3, 2, 4, nullptr, 5), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: packed is NULL (the lengths add up to 5 rows)"));
  // The last destination overlapping the source: caught before the first copy.
  void* const overlapping[] = {out0.data(), nullptr, out2.data() + 2};
  EXPECT_EQ(Unpack(L, 3, 5, overlapping, out2.data()), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack: sequences[2] overlaps the packed buffer"));
  ExpectUntouched();
}

TEST_F(PackErrors, PackPadded) {
  const int32_t* L = ex.lengths.data();
  std::vector<float> src(18, 1.0f);
  auto call = [&](const void* pad, int64_t batch, int64_t max_len, const int32_t* lengths,
                  int64_t row = 2, size_t es = 4, void* dst = nullptr, int64_t cap = 6) {
    return dcc_pack_padded(pad, batch, max_len, lengths, row, es, dst ? dst : packed.data(), cap);
  };
  EXPECT_EQ(call(src.data(), -1, 3, L), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: batch is -1; batch must be >= 0"));
  EXPECT_EQ(call(src.data(), 3, -1, L), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: max_len is -1; max_len must be >= 0"));
  EXPECT_EQ(call(src.data(), 3, 3, L, 0), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(call(src.data(), 3, 3, L, 2, 0), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(call(src.data(), 3, 3, L, 2, 4, nullptr, -5), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(call(src.data(), int64_t{1} << 40, int64_t{1} << 40, L), DCC_ERR_OVERFLOW);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: the padded buffer's 1099511627776 x "
                                      "1099511627776 rows overflow int64"));
  EXPECT_EQ(call(src.data(), int64_t{1} << 20, int64_t{1} << 20, L, int64_t{1} << 30),
            DCC_ERR_OVERFLOW);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_pack_padded: the padded buffer of 1099511627776 rows of 4294967296 "
                    "bytes overflows the address space"));
  EXPECT_EQ(call(nullptr, 3, 3, L), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_pack_padded: padded is NULL (batch is 3, max_len is 3)"));
  EXPECT_EQ(call(src.data(), 3, 3, nullptr), DCC_ERR_NULL_POINTER);
  const int32_t negative[] = {1, -4, 1};
  EXPECT_EQ(call(src.data(), 3, 3, negative), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: lengths[1] is -4; lengths must be >= 0"));
  const int32_t too_long[] = {1, 0, 4};
  EXPECT_EQ(call(src.data(), 3, 3, too_long), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: lengths[2] is 4, more than max_len (3)"));
  EXPECT_EQ(call(src.data(), 3, 3, L, 2, 4, nullptr, 4), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_pack_padded: the lengths add up to 5 rows but the "
                                      "packed buffer holds 4 (packed_capacity_rows is 4)"));
  EXPECT_EQ(dcc_pack_padded(src.data(), 3, 3, L, 2, 4, nullptr, 6), DCC_ERR_NULL_POINTER);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_pack_padded: packed is NULL (the lengths add up to 5 rows)"));
  EXPECT_EQ(call(packed.data(), 1, 3, L, 2, 4, packed.data() + 4, 3), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_pack_padded: the padded buffer overlaps the packed buffer"));
  ExpectUntouched();
}

TEST_F(PackErrors, UnpackPadded) {
  const int32_t* L = ex.lengths.data();
  const float* src = ex.packed_expected.data();
  auto call = [&](void* pad, int64_t batch, int64_t max_len, const int32_t* lengths,
                  int64_t row = 2, size_t es = 4, const void* from = nullptr, int64_t rows = 5,
                  const void* f = nullptr) {
    return dcc_unpack_padded(pad, batch, max_len, lengths, row, es, from ? from : src, rows,
                             f ? f : &fill);
  };
  EXPECT_EQ(call(padded.data(), -1, 3, L), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack_padded: batch is -1; batch must be >= 0"));
  EXPECT_EQ(call(padded.data(), 3, -7, L), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_EQ(call(padded.data(), 3, 3, L, -2), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(call(padded.data(), 3, 3, L, 2, 0), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(call(padded.data(), 3, 3, L, 2, 4, nullptr, -1), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack_padded: packed_rows is -1; it must be >= 0"));
  EXPECT_EQ(call(nullptr, 3, 3, L), DCC_ERR_NULL_POINTER);
  EXPECT_EQ(call(padded.data(), 3, 3, nullptr), DCC_ERR_NULL_POINTER);
  const int32_t negative[] = {1, 0, -1};
  EXPECT_EQ(call(padded.data(), 3, 3, negative), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack_padded: lengths[2] is -1; lengths must be >= 0"));
  const int32_t too_long[] = {4, 0, 1};
  EXPECT_EQ(call(padded.data(), 3, 3, too_long), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack_padded: lengths[0] is 4, more than max_len (3)"));
  EXPECT_EQ(call(padded.data(), 3, 3, L, 2, 4, nullptr, 3), DCC_ERR_SIZE_MISMATCH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_unpack_padded: the lengths add up to 5 rows but the "
                                      "packed buffer holds 3 (packed_rows is 3)"));
  EXPECT_EQ(dcc_unpack_padded(padded.data(), 3, 3, L, 2, 4, nullptr, 5, &fill),
            DCC_ERR_NULL_POINTER);
  EXPECT_EQ(call(padded.data(), 3, 3, L, 2, 4, padded.data() + 2), DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_unpack_padded: the padded buffer overlaps the packed buffer"));
  // fill_value inside the buffer being written.
  EXPECT_EQ(call(padded.data(), 3, 3, L, 2, 4, nullptr, 5, padded.data() + 17),
            DCC_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(dcc_last_error(),
              StrEq("dcc_unpack_padded: fill_value points into the padded buffer"));
  ExpectUntouched();
}

}  // namespace
