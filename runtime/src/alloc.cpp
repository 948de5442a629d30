// dcc_alloc / dcc_free: 64-byte aligned allocation with errors recorded,
// and reuse of large freed blocks.
//
// A generated kernel allocates its temporaries on entry and frees them on
// return (the scores of attention: hundreds of MB on long sequences). Fresh
// memory that large comes from mmap, so every call would fault in and have
// the kernel zero every page again (about 15% of multi-head attention's
// time, bench/RESULTS.md). So dcc_free keeps blocks of kReuseMin bytes or
// more, up to kReuseBudget bytes in all (the oldest are released first),
// and dcc_alloc hands one back for a request it fits without wasting more
// than half of it. dcc_alloc_trim releases them.
#include "alloc.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

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

namespace {

constexpr std::size_t kReuseMin = std::size_t{1} << 20;
constexpr std::size_t kReuseBudget = std::size_t{1} << 30;

struct Reuse {
  std::mutex mu;
  std::unordered_map<void*, std::size_t> live;          // large blocks handed out: rounded size
  std::vector<std::pair<void*, std::size_t>> free_list;  // kept blocks, oldest first
  std::size_t kept = 0;                                  // bytes in free_list
};

Reuse& reuse() {
  static Reuse* r = new Reuse;  // never destroyed: dcc_free may run during exit
  return *r;
}

/// A kept block of at least `rounded` bytes and at most twice that, or null.
void* take_kept(std::size_t rounded) noexcept {
  Reuse& r = reuse();
  std::lock_guard<std::mutex> lock(r.mu);
  std::size_t best = r.free_list.size();
  for (std::size_t k = 0; k < r.free_list.size(); ++k) {
    std::size_t size = r.free_list[k].second;
    if (size >= rounded && size / 2 <= rounded && (best == r.free_list.size() || size < r.free_list[best].second))
      best = k;
  }
  if (best == r.free_list.size()) return nullptr;
  auto [p, size] = r.free_list[best];
  r.free_list.erase(r.free_list.begin() + static_cast<std::ptrdiff_t>(best));
  r.kept -= size;
  try {
    r.live.emplace(p, size);
  } catch (...) {
    std::free(p);
    return nullptr;
  }
  return p;
}

/// Records a new large block; false (and the block freed) when the table cannot grow.
bool track(void* p, std::size_t rounded) noexcept {
  Reuse& r = reuse();
  std::lock_guard<std::mutex> lock(r.mu);
  try {
    r.live.emplace(p, rounded);
    return true;
  } catch (...) {
    std::free(p);
    return false;
  }
}

/// Keeps a large block for reuse; false when `p` is not one.
bool keep(void* p) noexcept {
  Reuse& r = reuse();
  std::vector<void*> release;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(p);
    if (it == r.live.end()) return false;
    std::size_t size = it->second;
    r.live.erase(it);
    if (size > kReuseBudget) {
      release.push_back(p);
    } else {
      try {
        r.free_list.emplace_back(p, size);
        r.kept += size;
      } catch (...) {
        release.push_back(p);
      }
      while (r.kept > kReuseBudget) {
        release.push_back(r.free_list.front().first);
        r.kept -= r.free_list.front().second;
        r.free_list.erase(r.free_list.begin());
      }
    }
  }
  for (void* q : release) std::free(q);
  return true;
}

}  // namespace

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
  bool large = rounded >= kReuseMin;
  void* p = large ? take_kept(rounded) : nullptr;
  if (p == nullptr) {
    p = aligned_alloc64(bytes);
    if (p != nullptr && large && !track(p, rounded)) p = nullptr;
  }
  if (p == nullptr) {
    fail(DCC_ERR_OUT_OF_MEMORY, "dcc_alloc: out of memory allocating {} bytes", bytes);
  }
  return p;
}

void dcc_fill_uninit(void* p, size_t bytes) noexcept {
  static const bool poison = [] {
    const char* v = std::getenv("DCC_POISON_UNINIT");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  if (poison && p != nullptr) std::memset(p, 0xFF, bytes);
}

void dcc_free(void* ptr) noexcept {
  if (ptr == nullptr) return;
  if (!keep(ptr)) aligned_free(ptr);
}

void dcc_alloc_trim(void) noexcept {
  Reuse& r = reuse();
  std::vector<std::pair<void*, std::size_t>> release;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    release.swap(r.free_list);
    r.kept = 0;
  }
  for (auto& [p, size] : release) std::free(p);
}

std::size_t dcc_alloc_kept_bytes(void) noexcept {
  Reuse& r = reuse();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.kept;
}

}  // extern "C"
