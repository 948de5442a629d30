// Thread-local last error, status names, and the C entry points reading them.
#include "error.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace dccc::rt {
namespace {

struct ErrorState {
  char message[kMaxErrorBytes];
  dcc_status status;
  std::uint64_t count;
};

// Zero-initialised and trivially destructible: no TLS constructor or
// destructor runs, so reading it never fails.
thread_local ErrorState t_error{};

}  // namespace

dcc_status set_error(dcc_status status, std::string_view message) noexcept {
  std::size_t n = message.size();
  if (n >= kMaxErrorBytes) {
    n = kMaxErrorBytes - 1;
    // memmove: `message` may alias t_error.message.
    std::memmove(t_error.message, message.data(), n - 3);
    std::memcpy(t_error.message + n - 3, "...", 3);
  } else if (n > 0) {  // an empty view's data() may be NULL
    std::memmove(t_error.message, message.data(), n);
  }
  t_error.message[n] = '\0';
  t_error.status = status;
  ++t_error.count;
  return status;
}

std::uint64_t error_count() noexcept { return t_error.count; }

dcc_status fail_from_exception(std::string_view where) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(DCC_ERR_OUT_OF_MEMORY, "{}: out of memory", where);
  } catch (const std::exception& e) {
    return fail(DCC_ERR_INTERNAL, "{}: C++ exception: {}", where, e.what());
  } catch (...) {
    return fail(DCC_ERR_INTERNAL, "{}: unknown C++ exception", where);
  }
}

}  // namespace dccc::rt

using namespace dccc::rt;

extern "C" {

uint32_t dcc_abi_version(void) noexcept { return DCCRT_ABI_VERSION; }

const char* dcc_last_error(void) noexcept { return t_error.message; }

dcc_status dcc_last_status(void) noexcept { return t_error.status; }

void dcc_clear_error(void) noexcept {
  t_error.message[0] = '\0';
  t_error.status = DCC_OK;
}

dcc_status dcc_set_error(dcc_status status, const char* message) noexcept {
  if (status == DCC_OK) {
    dcc_clear_error();
    return DCC_OK;
  }
  return set_error(status, message ? std::string_view(message) : std::string_view());
}

const char* dcc_status_name(dcc_status status) noexcept {
  switch (status) {
    case DCC_OK:
      return "DCC_OK";
    case DCC_ERR_NULL_POINTER:
      return "DCC_ERR_NULL_POINTER";
    case DCC_ERR_INVALID_ARGUMENT:
      return "DCC_ERR_INVALID_ARGUMENT";
    case DCC_ERR_NEGATIVE_LENGTH:
      return "DCC_ERR_NEGATIVE_LENGTH";
    case DCC_ERR_OVERFLOW:
      return "DCC_ERR_OVERFLOW";
    case DCC_ERR_SIZE_MISMATCH:
      return "DCC_ERR_SIZE_MISMATCH";
    case DCC_ERR_OUT_OF_MEMORY:
      return "DCC_ERR_OUT_OF_MEMORY";
    case DCC_ERR_CUDA:
      return "DCC_ERR_CUDA";
    case DCC_ERR_INTERNAL:
      return "DCC_ERR_INTERNAL";
  }
  return "DCC_ERR_UNKNOWN";
}

}  // extern "C"
