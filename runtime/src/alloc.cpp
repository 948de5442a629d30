// dcc_alloc / dcc_free: 64-byte aligned allocation with errors recorded.
#include "alloc.h"

#include <cstdint>
#include <cstdlib>
#include <limits>

#include "error.h"

namespace dccc::rt {

bool round_to_alignment(std::size_t bytes, std::size_t* rounded) noexcept {
  if (bytes == 0) bytes = 1;  // a unique pointer for empty buffers
  std::size_t r = 0;
  if (__builtin_add_overflow(bytes, kAlignment - 1, &r)) return false;
  *rounded = r & ~(kAlignment - 1);
  return true;
}

void* aligned_alloc64(std::size_t bytes) noexcept {
  std::size_t rounded = 0;
  if (!round_to_alignment(bytes, &rounded)) return nullptr;
  // No object may exceed PTRDIFF_MAX bytes; refusing here also keeps
  // sanitizer allocators from aborting on absurd sizes.
  if (rounded > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max())) {
    return nullptr;
  }
  return std::aligned_alloc(kAlignment, rounded);
}

void aligned_free(void* ptr) noexcept { std::free(ptr); }

}  // namespace dccc::rt

using namespace dccc::rt;

extern "C" {

void* dcc_alloc(size_t bytes) noexcept {
  size_t rounded = 0;
  if (!round_to_alignment(bytes, &rounded)) {
    fail(DCC_ERR_OVERFLOW, "dcc_alloc: {} bytes cannot be rounded up to a multiple of {}", bytes,
         kAlignment);
    return nullptr;
  }
  void* p = aligned_alloc64(bytes);
  if (p == nullptr) {
    fail(DCC_ERR_OUT_OF_MEMORY, "dcc_alloc: out of memory allocating {} bytes", bytes);
  }
  return p;
}

void dcc_free(void* ptr) noexcept { aligned_free(ptr); }

}  // extern "C"
