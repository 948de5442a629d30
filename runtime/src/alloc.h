// 64-byte aligned allocation shared by dcc_alloc and the prelude cache.
#pragma once

#include <cstddef>

namespace dccc::rt {

/// Alignment of every buffer the runtime hands out: a cache line, and enough
/// for any vector load the generated code uses.
inline constexpr std::size_t kAlignment = 64;

/// `bytes` rounded up to a non-zero multiple of kAlignment; false when that
/// overflows.
bool round_to_alignment(std::size_t bytes, std::size_t* rounded) noexcept;

/// Aligned allocation without recording errors; nullptr when `bytes` cannot
/// be rounded or allocated. Free with aligned_free.
void* aligned_alloc64(std::size_t bytes) noexcept;
void aligned_free(void* ptr) noexcept;

}  // namespace dccc::rt
