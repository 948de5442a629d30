// Internal error reporting of libdccrt: every failing C entry point records a
// formatted message in a fixed thread-local buffer (no allocation, trivially
// destructible, so it is safe in a dlclose'd library and when memory is out)
// and returns its status. dcc_last_error() reads the buffer back.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "dccrt.h"

namespace dccc::rt {

/// Capacity of the message buffer, terminator included.
inline constexpr std::size_t kMaxErrorBytes = 1024;

/// Records `message` (truncated to kMaxErrorBytes - 1 bytes, ending in "...")
/// and `status` as this thread's last error; returns `status`.
dcc_status set_error(dcc_status status, std::string_view message) noexcept;

/// Number of errors recorded on this thread so far; lets a caller see whether
/// a callback recorded its own message.
std::uint64_t error_count() noexcept;

/// Records a fmt-formatted message, `fail(DCC_ERR_NEGATIVE_LENGTH,
/// "dcc_pack: lengths[{}] is {}; lengths must be >= 0", b, len)`, and returns
/// `status`. Formats into a local buffer first, so arguments may point at the
/// current message (dcc_last_error()).
template <typename... Args>
dcc_status fail(dcc_status status, fmt::format_string<Args...> format, Args&&... args) noexcept {
  char buf[kMaxErrorBytes + 8];
  try {
    auto result = fmt::format_to_n(buf, sizeof buf, format, std::forward<Args>(args)...);
    return set_error(status,
                     std::string_view(buf, result.size < sizeof buf ? result.size : sizeof buf));
  } catch (...) {
    return set_error(status, "(error message could not be formatted)");
  }
}

/// Records the exception currently being handled as DCC_ERR_OUT_OF_MEMORY
/// (std::bad_alloc) or DCC_ERR_INTERNAL, prefixed with `where`; call it only
/// inside a catch block.
dcc_status fail_from_exception(std::string_view where) noexcept;

}  // namespace dccc::rt
