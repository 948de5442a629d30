// Lengths, offsets and cu_seqlens: the prefix sums that define the packed
// layout. Each entry point validates its whole input before writing.
#include "lengths.h"

#include <algorithm>
#include <limits>

#include "error.h"

namespace dccc::rt {

dcc_status check_batch(const char* fn, std::int64_t batch) noexcept {
  if (batch < 0) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: batch is {}; batch must be >= 0", fn, batch);
  }
  if (batch == std::numeric_limits<std::int64_t>::max()) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: batch is {}; batch + 1 overflows int64", fn, batch);
  }
  return DCC_OK;
}

dcc_status sum_lengths(const char* fn, const std::int32_t* lengths, std::int64_t batch,
                       std::int64_t* total) noexcept {
  if (batch > 0 && lengths == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: lengths is NULL (batch is {})", fn, batch);
  }
  // Blocks of 2^20 lengths < 2^31 sum to less than 2^51, so within a block a
  // plain (vectorisable) sum and minimum suffice; only block sums are checked
  // for overflow.
  constexpr std::int64_t kBlock = std::int64_t{1} << 20;
  std::int64_t sum = 0;
  for (std::int64_t start = 0; start < batch; start += kBlock) {
    const std::int64_t end = std::min(batch, start + kBlock);
    std::int64_t block_sum = 0;
    std::int32_t block_min = 0;
    for (std::int64_t b = start; b < end; ++b) {
      block_sum += lengths[b];
      block_min = std::min(block_min, lengths[b]);
    }
    if (block_min < 0) {
      std::int64_t b = start;
      while (lengths[b] >= 0) ++b;
      return fail(DCC_ERR_NEGATIVE_LENGTH, "{}: lengths[{}] is {}; lengths must be >= 0", fn, b,
                  lengths[b]);
    }
    std::int64_t next = 0;
    if (__builtin_add_overflow(sum, block_sum, &next)) {
      // Name the first length at which the running sum overflows.
      std::int64_t b = start;
      while (!__builtin_add_overflow(sum, std::int64_t{lengths[b]}, &sum)) ++b;
      return fail(DCC_ERR_OVERFLOW,
                  "{}: the sum of lengths[0..{}] overflows int64 (lengths[{}] is {})", fn, b, b,
                  lengths[b]);
    }
    sum = next;
  }
  *total = sum;
  return DCC_OK;
}

namespace {

// Checks cu_seqlens[0 .. batch] (batch already checked): starts at 0 and
// never decreases.
dcc_status check_cu_seqlens(const char* fn, const std::int32_t* cu_seqlens,
                            std::int64_t batch) noexcept {
  if (cu_seqlens == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: cu_seqlens is NULL", fn);
  }
  if (cu_seqlens[0] != 0) {
    return fail(DCC_ERR_SIZE_MISMATCH, "{}: cu_seqlens[0] is {}; cu_seqlens must start at 0", fn,
                cu_seqlens[0]);
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    if (cu_seqlens[b + 1] < cu_seqlens[b]) {
      return fail(DCC_ERR_SIZE_MISMATCH,
                  "{}: cu_seqlens[{}] is {} but cu_seqlens[{}] is {}; cu_seqlens must be "
                  "non-decreasing",
                  fn, b + 1, cu_seqlens[b + 1], b, cu_seqlens[b]);
    }
  }
  return DCC_OK;
}

}  // namespace
}  // namespace dccc::rt

using namespace dccc::rt;

extern "C" {

dcc_status dcc_total_length(const int32_t* lengths, int64_t batch, int64_t* total) noexcept {
  static constexpr const char* kFn = "dcc_total_length";
  if (dcc_status s = check_batch(kFn, batch)) return s;
  if (total == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: total is NULL", kFn);
  return sum_lengths(kFn, lengths, batch, total);
}

dcc_status dcc_offsets_from_lengths(const int32_t* lengths, int64_t batch,
                                    int64_t* offsets) noexcept {
  static constexpr const char* kFn = "dcc_offsets_from_lengths";
  if (dcc_status s = check_batch(kFn, batch)) return s;
  if (offsets == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: offsets is NULL", kFn);
  int64_t total = 0;
  if (dcc_status s = sum_lengths(kFn, lengths, batch, &total)) return s;
  // Validated: the running sums below cannot overflow.
  int64_t sum = 0;
  offsets[0] = 0;
  for (int64_t b = 0; b < batch; ++b) {
    sum += lengths[b];
    offsets[b + 1] = sum;
  }
  return DCC_OK;
}

dcc_status dcc_cu_seqlens_from_lengths(const int32_t* lengths, int64_t batch,
                                       int32_t* cu_seqlens) noexcept {
  static constexpr const char* kFn = "dcc_cu_seqlens_from_lengths";
  if (dcc_status s = check_batch(kFn, batch)) return s;
  if (cu_seqlens == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: cu_seqlens is NULL", kFn);
  int64_t total = 0;
  if (dcc_status s = sum_lengths(kFn, lengths, batch, &total)) return s;
  if (total > std::numeric_limits<int32_t>::max()) {
    return fail(DCC_ERR_OVERFLOW,
                "{}: the total length is {}, more than cu_seqlens (int32) can hold", kFn, total);
  }
  int32_t sum = 0;
  cu_seqlens[0] = 0;
  for (int64_t b = 0; b < batch; ++b) {
    sum += lengths[b];
    cu_seqlens[b + 1] = sum;
  }
  return DCC_OK;
}

dcc_status dcc_lengths_from_cu_seqlens(const int32_t* cu_seqlens, int64_t batch,
                                       int32_t* lengths) noexcept {
  static constexpr const char* kFn = "dcc_lengths_from_cu_seqlens";
  if (dcc_status s = check_batch(kFn, batch)) return s;
  if (batch > 0 && lengths == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: lengths is NULL (batch is {})", kFn, batch);
  }
  if (dcc_status s = check_cu_seqlens(kFn, cu_seqlens, batch)) return s;
  // Non-decreasing from 0: every difference lies in [0, INT32_MAX].
  for (int64_t b = 0; b < batch; ++b) lengths[b] = cu_seqlens[b + 1] - cu_seqlens[b];
  return DCC_OK;
}

dcc_status dcc_offsets_from_cu_seqlens(const int32_t* cu_seqlens, int64_t batch,
                                       int64_t* offsets) noexcept {
  static constexpr const char* kFn = "dcc_offsets_from_cu_seqlens";
  if (dcc_status s = check_batch(kFn, batch)) return s;
  if (offsets == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: offsets is NULL", kFn);
  if (dcc_status s = check_cu_seqlens(kFn, cu_seqlens, batch)) return s;
  for (int64_t b = 0; b <= batch; ++b) offsets[b] = cu_seqlens[b];
  return DCC_OK;
}

}  // extern "C"
