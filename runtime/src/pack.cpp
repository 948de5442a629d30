// Packing and unpacking between per-sequence or padded buffers and the packed
// layout. Each entry point runs every check first (the Plan is only built from
// validated arguments) and then copies; nothing after validation can fail, so
// an error never leaves a partial write behind.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

#include "error.h"
#include "lengths.h"

namespace dccc::rt {
namespace {

// Copies of at least this many bytes are spread over the thread pool, in
// chunks of about kChunkBytes.
constexpr std::size_t kParallelBytes = std::size_t{4} << 20;
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
// Largest byte size we hand to pointer arithmetic.
constexpr std::uint64_t kMaxBytes = std::numeric_limits<std::ptrdiff_t>::max();

dcc_status check_row(const char* fn, std::int64_t row_elems, std::size_t elem_size,
                     std::size_t* row_bytes) noexcept {
  if (row_elems <= 0) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: row_elems is {}; row_elems must be > 0", fn,
                row_elems);
  }
  if (elem_size == 0) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: elem_size is 0; elem_size must be > 0", fn);
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(row_elems), std::uint64_t{elem_size},
                             &bytes) ||
      bytes > kMaxBytes) {
    return fail(DCC_ERR_OVERFLOW,
                "{}: a row of {} elements of {} bytes overflows the address space", fn, row_elems,
                elem_size);
  }
  *row_bytes = static_cast<std::size_t>(bytes);
  return DCC_OK;
}

dcc_status rows_to_bytes(const char* fn, const char* what, std::int64_t rows, std::size_t row_bytes,
                         std::size_t* bytes) noexcept {
  std::uint64_t b = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(rows), std::uint64_t{row_bytes}, &b) ||
      b > kMaxBytes) {
    return fail(DCC_ERR_OVERFLOW, "{}: {} of {} rows of {} bytes overflows the address space", fn,
                what, rows, row_bytes);
  }
  *bytes = static_cast<std::size_t>(b);
  return DCC_OK;
}

dcc_status check_capacity(const char* fn, const char* name, std::int64_t capacity) noexcept {
  if (capacity < 0) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: {} is {}; it must be >= 0", fn, name, capacity);
  }
  return DCC_OK;
}

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) noexcept {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// A validated copy between the packed buffer and the per-sequence side: a list
// of sequence pointers, or a padded buffer with a fixed stride per sequence.
struct Plan {
  const std::int32_t* lengths;
  std::int64_t batch;
  std::size_t row_bytes;
  std::byte* packed;
  void* const* sequences;     // per-sequence side, or
  std::byte* padded;          // padded side, sequence b at padded + b * padded_stride
  std::size_t padded_stride;  // bytes
  bool to_packed;

  std::byte* sequence(std::int64_t b) const noexcept {
    return sequences ? static_cast<std::byte*>(sequences[b])
                     : padded + static_cast<std::size_t>(b) * padded_stride;
  }

  // Copies rows [r0, r1) of sequence b, which starts at packed row `offset`.
  void copy_rows(std::int64_t b, std::int64_t offset, std::int64_t r0,
                 std::int64_t r1) const noexcept {
    if (r0 >= r1) return;
    std::byte* seq = sequence(b) + static_cast<std::size_t>(r0) * row_bytes;
    std::byte* pk = packed + static_cast<std::size_t>(offset + r0) * row_bytes;
    const std::size_t n = static_cast<std::size_t>(r1 - r0) * row_bytes;
    if (to_packed) {
      std::memcpy(pk, seq, n);
    } else {
      std::memcpy(seq, pk, n);
    }
  }
};

struct ParallelCopy {
  const Plan* plan;
  const std::int64_t* offsets;  // batch + 1 prefix sums
};

// Copies packed rows [begin, end), whichever sequences they belong to, so
// that one very long sequence is split like any other work.
void copy_packed_rows(void* ctx, std::int64_t begin, std::int64_t end) {
  const auto& pc = *static_cast<const ParallelCopy*>(ctx);
  const std::int64_t batch = pc.plan->batch;
  const std::int64_t* off = pc.offsets;
  std::int64_t b = (std::upper_bound(off, off + batch + 1, begin) - off) - 1;
  for (; b < batch && off[b] < end; ++b) {
    const std::int64_t r0 = std::max(begin, off[b]) - off[b];
    const std::int64_t r1 = std::min(end, off[b + 1]) - off[b];
    pc.plan->copy_rows(b, off[b], r0, r1);
  }
}

void run(const Plan& plan, std::int64_t total_rows, std::size_t total_bytes) noexcept {
  if (total_bytes >= kParallelBytes && dcc_get_num_threads() > 1) {
    std::unique_ptr<std::int64_t[]> offsets(new (std::nothrow) std::int64_t[plan.batch + 1]);
    if (offsets) {
      offsets[0] = 0;
      for (std::int64_t b = 0; b < plan.batch; ++b) offsets[b + 1] = offsets[b] + plan.lengths[b];
      const ParallelCopy pc{&plan, offsets.get()};
      const auto grain =
          static_cast<std::int64_t>(std::max<std::size_t>(1, kChunkBytes / plan.row_bytes));
      // copy_packed_rows cannot throw, so this cannot fail.
      if (dcc_parallel_for(total_rows, grain, copy_packed_rows, const_cast<ParallelCopy*>(&pc)) ==
          DCC_OK) {
        return;
      }
    }
  }
  std::int64_t offset = 0;
  for (std::int64_t b = 0; b < plan.batch; ++b) {
    plan.copy_rows(b, offset, 0, plan.lengths[b]);
    offset += plan.lengths[b];
  }
}

// Checks shared by dcc_pack and dcc_unpack; fills the Plan on success.
dcc_status validate_sequences(const char* fn, const char* seq_name, void* const* sequences,
                              const std::int32_t* lengths, std::int64_t batch,
                              std::int64_t row_elems, std::size_t elem_size, const void* packed,
                              const char* capacity_name, std::int64_t capacity, Plan* plan,
                              std::int64_t* total_rows, std::size_t* total_bytes) noexcept {
  std::size_t row_bytes = 0;
  if (dcc_status s = check_batch(fn, batch)) return s;
  if (dcc_status s = check_row(fn, row_elems, elem_size, &row_bytes)) return s;
  if (dcc_status s = check_capacity(fn, capacity_name, capacity)) return s;
  if (batch > 0 && sequences == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: {} is NULL (batch is {})", fn, seq_name, batch);
  }
  std::int64_t total = 0;
  if (dcc_status s = sum_lengths(fn, lengths, batch, &total)) return s;
  std::size_t bytes = 0;
  if (dcc_status s = rows_to_bytes(fn, "the packed buffer", total, row_bytes, &bytes)) return s;
  if (total > capacity) {
    return fail(DCC_ERR_SIZE_MISMATCH,
                "{}: the lengths add up to {} rows but the packed buffer holds {} ({} is {})", fn,
                total, capacity, capacity_name, capacity);
  }
  if (total > 0 && packed == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: packed is NULL (the lengths add up to {} rows)", fn,
                total);
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    if (lengths[b] > 0 && sequences[b] == nullptr) {
      return fail(DCC_ERR_NULL_POINTER, "{}: {}[{}] is NULL but lengths[{}] is {}", fn, seq_name, b,
                  b, lengths[b]);
    }
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    // A sequence's byte size is at most the total's, so it cannot overflow.
    const std::size_t seq_bytes = static_cast<std::size_t>(lengths[b]) * row_bytes;
    if (overlaps(sequences[b], seq_bytes, packed, bytes)) {
      return fail(DCC_ERR_INVALID_ARGUMENT, "{}: {}[{}] overlaps the packed buffer", fn, seq_name,
                  b);
    }
  }
  *plan = Plan{lengths,   batch,   row_bytes, static_cast<std::byte*>(const_cast<void*>(packed)),
               sequences, nullptr, 0,         false};
  *total_rows = total;
  *total_bytes = bytes;
  return DCC_OK;
}

// Checks shared by dcc_pack_padded and dcc_unpack_padded. Also stores the
// padded buffer's byte size in *padded_bytes.
dcc_status validate_padded(const char* fn, const void* padded, std::int64_t batch,
                           std::int64_t max_len, const std::int32_t* lengths,
                           std::int64_t row_elems, std::size_t elem_size, const void* packed,
                           const char* capacity_name, std::int64_t capacity, Plan* plan,
                           std::int64_t* total_rows, std::size_t* total_bytes,
                           std::size_t* padded_bytes) noexcept {
  std::size_t row_bytes = 0;
  if (dcc_status s = check_batch(fn, batch)) return s;
  if (max_len < 0) {
    return fail(DCC_ERR_NEGATIVE_LENGTH, "{}: max_len is {}; max_len must be >= 0", fn, max_len);
  }
  if (dcc_status s = check_row(fn, row_elems, elem_size, &row_bytes)) return s;
  if (dcc_status s = check_capacity(fn, capacity_name, capacity)) return s;
  std::int64_t padded_rows = 0;
  std::size_t pbytes = 0;
  if (__builtin_mul_overflow(batch, max_len, &padded_rows)) {
    return fail(DCC_ERR_OVERFLOW, "{}: the padded buffer's {} x {} rows overflow int64", fn, batch,
                max_len);
  }
  if (dcc_status s = rows_to_bytes(fn, "the padded buffer", padded_rows, row_bytes, &pbytes)) {
    return s;
  }
  if (pbytes > 0 && padded == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: padded is NULL (batch is {}, max_len is {})", fn, batch,
                max_len);
  }
  std::int64_t total = 0;
  if (dcc_status s = sum_lengths(fn, lengths, batch, &total)) return s;
  for (std::int64_t b = 0; b < batch; ++b) {
    if (lengths[b] > max_len) {
      return fail(DCC_ERR_SIZE_MISMATCH, "{}: lengths[{}] is {}, more than max_len ({})", fn, b,
                  lengths[b], max_len);
    }
  }
  // total <= batch * max_len, so its byte size fits.
  const std::size_t bytes = static_cast<std::size_t>(total) * row_bytes;
  if (total > capacity) {
    return fail(DCC_ERR_SIZE_MISMATCH,
                "{}: the lengths add up to {} rows but the packed buffer holds {} ({} is {})", fn,
                total, capacity, capacity_name, capacity);
  }
  if (total > 0 && packed == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "{}: packed is NULL (the lengths add up to {} rows)", fn,
                total);
  }
  if (overlaps(padded, pbytes, packed, bytes)) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: the padded buffer overlaps the packed buffer", fn);
  }
  *plan = Plan{lengths,
               batch,
               row_bytes,
               static_cast<std::byte*>(const_cast<void*>(packed)),
               nullptr,
               static_cast<std::byte*>(const_cast<void*>(padded)),
               static_cast<std::size_t>(max_len) * row_bytes,
               false};
  *total_rows = total;
  *total_bytes = bytes;
  *padded_bytes = pbytes;
  return DCC_OK;
}

// Sets `bytes` bytes at dst (a whole number of elements) to copies of the
// elem_size bytes at fill (zero bytes when fill is NULL), doubling the
// written prefix so that each memcpy is long.
void fill_elements(std::byte* dst, std::size_t bytes, const std::byte* fill,
                   std::size_t elem_size) noexcept {
  if (bytes == 0) return;
  if (fill == nullptr) {
    std::memset(dst, 0, bytes);
    return;
  }
  if (elem_size == 1) {
    std::memset(dst, static_cast<int>(*fill), bytes);
    return;
  }
  std::memcpy(dst, fill, elem_size);
  std::size_t done = elem_size;
  while (done < bytes) {
    const std::size_t n = std::min(done, bytes - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
}

struct UnpackPadded {
  const Plan* plan;
  std::int64_t max_len;
  const std::int64_t* offsets;
  const std::byte* fill;
  std::size_t elem_size;
};

// Writes padded sequences [begin, end): every sequence is max_len rows of
// work, so chunks of sequences are balanced.
void unpack_padded_sequences(void* ctx, std::int64_t begin, std::int64_t end) {
  const auto& u = *static_cast<const UnpackPadded*>(ctx);
  const std::size_t rb = u.plan->row_bytes;
  for (std::int64_t b = begin; b < end; ++b) {
    const std::int64_t len = u.plan->lengths[b];
    u.plan->copy_rows(b, u.offsets[b], 0, len);
    fill_elements(u.plan->sequence(b) + static_cast<std::size_t>(len) * rb,
                  static_cast<std::size_t>(u.max_len - len) * rb, u.fill, u.elem_size);
  }
}

}  // namespace
}  // namespace dccc::rt

using namespace dccc::rt;

extern "C" {

dcc_status dcc_pack(const void* const* sequences, const int32_t* lengths, int64_t batch,
                    int64_t row_elems, size_t elem_size, void* packed,
                    int64_t packed_capacity_rows) noexcept {
  Plan plan{};
  int64_t total_rows = 0;
  size_t total_bytes = 0;
  if (dcc_status s =
          validate_sequences("dcc_pack", "sequences", const_cast<void* const*>(sequences), lengths,
                             batch, row_elems, elem_size, packed, "packed_capacity_rows",
                             packed_capacity_rows, &plan, &total_rows, &total_bytes)) {
    return s;
  }
  plan.to_packed = true;
  run(plan, total_rows, total_bytes);
  return DCC_OK;
}

dcc_status dcc_unpack(void* const* sequences, const int32_t* lengths, int64_t batch,
                      int64_t row_elems, size_t elem_size, const void* packed,
                      int64_t packed_rows) noexcept {
  Plan plan{};
  int64_t total_rows = 0;
  size_t total_bytes = 0;
  if (dcc_status s = validate_sequences("dcc_unpack", "sequences", sequences, lengths, batch,
                                        row_elems, elem_size, packed, "packed_rows", packed_rows,
                                        &plan, &total_rows, &total_bytes)) {
    return s;
  }
  plan.to_packed = false;
  run(plan, total_rows, total_bytes);
  return DCC_OK;
}

dcc_status dcc_pack_padded(const void* padded, int64_t batch, int64_t max_len,
                           const int32_t* lengths, int64_t row_elems, size_t elem_size,
                           void* packed, int64_t packed_capacity_rows) noexcept {
  Plan plan{};
  int64_t total_rows = 0;
  size_t total_bytes = 0, padded_bytes = 0;
  if (dcc_status s =
          validate_padded("dcc_pack_padded", padded, batch, max_len, lengths, row_elems, elem_size,
                          packed, "packed_capacity_rows", packed_capacity_rows, &plan, &total_rows,
                          &total_bytes, &padded_bytes)) {
    return s;
  }
  plan.to_packed = true;
  run(plan, total_rows, total_bytes);
  return DCC_OK;
}

dcc_status dcc_unpack_padded(void* padded, int64_t batch, int64_t max_len, const int32_t* lengths,
                             int64_t row_elems, size_t elem_size, const void* packed,
                             int64_t packed_rows, const void* fill_value) noexcept {
  static constexpr const char* kFn = "dcc_unpack_padded";
  Plan plan{};
  int64_t total_rows = 0;
  size_t total_bytes = 0, padded_bytes = 0;
  if (dcc_status s = validate_padded(kFn, padded, batch, max_len, lengths, row_elems, elem_size,
                                     packed, "packed_rows", packed_rows, &plan, &total_rows,
                                     &total_bytes, &padded_bytes)) {
    return s;
  }
  if (fill_value != nullptr && overlaps(fill_value, elem_size, padded, padded_bytes)) {
    return fail(DCC_ERR_INVALID_ARGUMENT, "{}: fill_value points into the padded buffer", kFn);
  }
  plan.to_packed = false;
  if (padded_bytes == 0) return DCC_OK;
  std::unique_ptr<int64_t[]> offsets(new (std::nothrow) int64_t[batch + 1]);
  if (offsets) {
    offsets[0] = 0;
    for (int64_t b = 0; b < batch; ++b) offsets[b + 1] = offsets[b] + lengths[b];
    const UnpackPadded u{&plan, max_len, offsets.get(), static_cast<const std::byte*>(fill_value),
                         elem_size};
    int64_t grain = batch;
    if (padded_bytes >= kParallelBytes) {
      grain = static_cast<int64_t>(std::max<size_t>(1, kChunkBytes / plan.padded_stride));
    }
    if (dcc_parallel_for(batch, grain, unpack_padded_sequences, const_cast<UnpackPadded*>(&u)) ==
        DCC_OK) {
      return DCC_OK;
    }
  }
  // No memory for the offsets: the same work, serially, with a running offset.
  int64_t offset = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[b];
    plan.copy_rows(b, offset, 0, len);
    fill_elements(plan.sequence(b) + static_cast<size_t>(len) * plan.row_bytes,
                  static_cast<size_t>(max_len - len) * plan.row_bytes,
                  static_cast<const std::byte*>(fill_value), elem_size);
    offset += len;
  }
  return DCC_OK;
}

}  // extern "C"
