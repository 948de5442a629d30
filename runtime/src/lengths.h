// Validation shared by the functions that take a batch of lengths: the checks
// every packing and offsets entry point runs before it writes anything.
#pragma once

#include <cstdint>

#include "dccrt.h"

namespace dccc::rt {

/// DCC_OK when 0 <= batch and batch + 1 is representable; otherwise records
/// an error naming `fn` and returns it.
dcc_status check_batch(const char* fn, std::int64_t batch) noexcept;

/// Checks lengths[0 .. batch) (NULL allowed when batch == 0; batch already
/// checked): each >= 0 and the int64 sum not overflowing. Stores the sum in
/// *total on success. Errors name `fn`, the index and the value.
dcc_status sum_lengths(const char* fn, const std::int32_t* lengths, std::int64_t batch,
                       std::int64_t* total) noexcept;

}  // namespace dccc::rt
