// The prelude cache: buffers computed from length patterns, keyed by
// (kind, key bytes), shared across calls, LRU-evicted beyond a byte budget.
//
// Entries live in a hash map keyed by a view of their own key bytes (compared
// in full) and, once ready, in an intrusive LRU list. A missing entry is
// inserted as "computing" and computed without the lock held, so requests for
// other entries proceed; requests for the same entry wait on a condition
// variable and find it ready, or gone if the computation failed (then they
// compute it themselves).
//
// An entry handed out by dcc_prelude_acquire is pinned (a count of users,
// changed under the lock) until dcc_prelude_unpin: eviction skips pinned
// entries, so the cached bytes may exceed the budget while they are pinned,
// and the last unpin evicts down to the budget again. An entry that clear or
// drop removes while pinned leaves the map and the LRU list for the list of
// detached entries; the last unpin frees it.
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "alloc.h"
#include "error.h"

namespace dccc::rt {
namespace {

constexpr const char* kFn = "dcc_prelude_get";
constexpr std::size_t kDefaultBudget = std::size_t{256} << 20;

struct KeyView {
  std::uint64_t kind;
  std::string_view bytes;
  std::size_t hash;

  bool operator==(const KeyView& o) const noexcept {
    return hash == o.hash && kind == o.kind && bytes == o.bytes;
  }
};

struct KeyHash {
  std::size_t operator()(const KeyView& k) const noexcept { return k.hash; }
};

std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  return x;
}

std::size_t hash_key(std::uint64_t kind, const void* key, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(key);
  std::uint64_t h = mix(kind ^ 0x9e3779b97f4a7c15ULL) ^ n;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ mix(w)) * 0x9e3779b97f4a7c15ULL;
  }
  std::uint64_t tail = 0;
  if (i < n) std::memcpy(&tail, p + i, n - i);
  return static_cast<std::size_t>(mix(h ^ mix(tail ^ (n - i))));
}

struct Entry {
  std::unique_ptr<char[]> key_storage;
  KeyView key;
  std::size_t out_bytes = 0;
  void* buffer = nullptr;
  dcc_prelude_release_fn release = nullptr;  // called with buffer before it is freed
  bool ready = false;
  bool detached = false;             // out of the map, freed by the last unpin
  std::thread::id computing_thread;  // while !ready
  std::size_t pins = 0;              // users between acquire and unpin
  dcc_prelude_cache* cache = nullptr;
  Entry* newer = nullptr;            // LRU links while ready, detached list's once detached
  Entry* older = nullptr;

  ~Entry() {
    if (release != nullptr && buffer != nullptr && ready) release(buffer, out_bytes);
    aligned_free(buffer);
  }
};

std::size_t default_budget() noexcept {
  if (const char* env = std::getenv("DCC_PRELUDE_CACHE_BYTES")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') return static_cast<std::size_t>(n);
  }
  return kDefaultBudget;
}

}  // namespace
}  // namespace dccc::rt

using namespace dccc::rt;

struct dcc_prelude_cache {
  explicit dcc_prelude_cache(std::size_t budget) : max_bytes(budget) {}
  ~dcc_prelude_cache() {
    while (detached != nullptr) {
      Entry* e = detached;
      detached = e->older;
      delete e;
    }
  }

  // With `pin`, the entry is pinned and *pin set to it (only on success).
  dcc_status get(std::uint64_t kind, const void* key, std::size_t key_bytes, std::size_t out_bytes,
                 dcc_prelude_fn compute, dcc_prelude_release_fn release, void* ctx,
                 const void** out, Entry** pin = nullptr) noexcept;
  void unpin(Entry* e) noexcept;
  // Lookup only: the ready entry for (kind, key), or nullptr. Requires mutex.
  const Entry* find(std::uint64_t kind, const void* key, std::size_t key_bytes) const noexcept {
    const KeyView wanted{kind,
                         std::string_view(key_bytes ? static_cast<const char*>(key) : "", key_bytes),
                         hash_key(kind, key, key_bytes)};
    auto it = entries.find(wanted);
    return it != entries.end() && it->second->ready ? it->second.get() : nullptr;
  }
  void clear() noexcept;
  // Drops the ready entries whose release function is `release`.
  void drop(dcc_prelude_release_fn release) noexcept;

  // Requires mutex.
  void link_newest(Entry* e) noexcept {
    e->older = newest;
    e->newer = nullptr;
    if (newest) newest->newer = e;
    newest = e;
    if (!oldest) oldest = e;
  }
  void unlink(Entry* e) noexcept {
    (e->newer ? e->newer->older : newest) = e->older;
    (e->older ? e->older->newer : oldest) = e->newer;
    e->newer = e->older = nullptr;
  }
  // Evicts least recently used entries while over budget, sparing `keep` and
  // pinned entries.
  void evict(const Entry* keep) noexcept {
    for (Entry* e = oldest; e != nullptr && max_bytes != 0 && bytes > max_bytes;) {
      Entry* next = e->newer;
      if (e != keep && e->pins == 0) remove(e);
      e = next;
    }
  }
  // Takes a ready entry out of the LRU list and the map: frees it, or, while
  // pinned, moves it to the detached list for the last unpin to free.
  void remove(Entry* e) noexcept {
    unlink(e);
    bytes -= e->out_bytes;
    if (e->pins == 0) {
      erase(e);
      return;
    }
    auto it = entries.find(e->key);
    it->second.release();
    entries.erase(it);
    e->detached = true;
    e->newer = nullptr;
    e->older = detached;
    if (detached != nullptr) detached->newer = e;
    detached = e;
  }
  // Removes `e` from the map, freeing it and its buffer. Erasing through an
  // iterator: the key used to find it lives in the entry being destroyed.
  void erase(const Entry* e) noexcept { entries.erase(entries.find(e->key)); }

  const std::size_t max_bytes;
  std::mutex mutex;  // guards everything below
  std::condition_variable computed;
  std::unordered_map<KeyView, std::unique_ptr<Entry>, KeyHash> entries;
  Entry* newest = nullptr;
  Entry* oldest = nullptr;
  Entry* detached = nullptr;  // pinned entries removed by clear or drop, linked by `older`
  std::size_t bytes = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
};

dcc_status dcc_prelude_cache::get(std::uint64_t kind, const void* key, std::size_t key_bytes,
                                  std::size_t out_bytes, dcc_prelude_fn compute,
                                  dcc_prelude_release_fn release, void* ctx, const void** out,
                                  Entry** pin) noexcept {
  const KeyView wanted{kind,
                       std::string_view(key_bytes ? static_cast<const char*>(key) : "", key_bytes),
                       hash_key(kind, key, key_bytes)};
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    auto it = entries.find(wanted);
    if (it == entries.end()) break;
    Entry* e = it->second.get();
    if (e->out_bytes != out_bytes) {
      return fail(DCC_ERR_SIZE_MISMATCH,
                  "{}: the prelude of kind {:#x} for this key is cached with {} bytes, but {} "
                  "were asked for",
                  kFn, kind, e->out_bytes, out_bytes);
    }
    if (e->ready) {
      ++hits;
      unlink(e);
      link_newest(e);
      *out = e->buffer;
      if (pin != nullptr) {
        ++e->pins;
        *pin = e;
      }
      return DCC_OK;
    }
    if (e->computing_thread == std::this_thread::get_id()) {
      return fail(DCC_ERR_INVALID_ARGUMENT,
                  "{}: the prelude of kind {:#x} was requested while computing itself", kFn, kind);
    }
    computed.wait(lock);
  }

  // Miss: claim the entry, then compute it without the lock.
  Entry* e = nullptr;
  try {
    auto owned = std::make_unique<Entry>();
    owned->key_storage.reset(new char[key_bytes ? key_bytes : 1]);
    if (key_bytes) std::memcpy(owned->key_storage.get(), key, key_bytes);
    owned->key = KeyView{kind, std::string_view(owned->key_storage.get(), key_bytes), wanted.hash};
    owned->out_bytes = out_bytes;
    owned->computing_thread = std::this_thread::get_id();
    owned->cache = this;
    e = owned.get();
    entries.emplace(e->key, std::move(owned));
  } catch (...) {
    return fail_from_exception(kFn);
  }
  ++misses;
  lock.unlock();

  const std::uint64_t errors_before = error_count();
  dcc_status status = DCC_OK;
  void* buffer = aligned_alloc64(out_bytes);
  if (buffer == nullptr) {
    status = fail(DCC_ERR_OUT_OF_MEMORY, "{}: out of memory allocating {} bytes for kind {:#x}",
                  kFn, out_bytes, kind);
  } else {
    std::memset(buffer, 0, out_bytes);
    try {
      status = compute(ctx, buffer, out_bytes);
    } catch (...) {
      status = fail_from_exception(kFn);
    }
    if (status != DCC_OK && error_count() == errors_before) {
      fail(status, "{}: computing the prelude of kind {:#x} failed with {}", kFn, kind,
           dcc_status_name(status));
    }
  }

  lock.lock();
  if (status != DCC_OK) {
    aligned_free(buffer);
    erase(e);
    lock.unlock();
    computed.notify_all();
    return status;
  }
  e->buffer = buffer;
  e->release = release;
  e->ready = true;
  bytes += out_bytes;
  link_newest(e);
  evict(e);
  *out = buffer;
  if (pin != nullptr) {
    ++e->pins;
    *pin = e;
  }
  lock.unlock();
  computed.notify_all();
  return DCC_OK;
}

void dcc_prelude_cache::unpin(Entry* e) noexcept {
  std::unique_lock<std::mutex> lock(mutex);
  if (--e->pins != 0) return;
  if (!e->detached) {
    evict(nullptr);
    return;
  }
  (e->newer ? e->newer->older : detached) = e->older;
  if (e->older) e->older->newer = e->newer;
  lock.unlock();
  delete e;  // runs its release function without the lock held
}

void dcc_prelude_cache::clear() noexcept {
  std::lock_guard<std::mutex> lock(mutex);
  while (oldest != nullptr) remove(oldest);
}

void dcc_prelude_cache::drop(dcc_prelude_release_fn release) noexcept {
  std::lock_guard<std::mutex> lock(mutex);
  for (Entry* e = oldest; e != nullptr;) {
    Entry* next = e->newer;
    if (e->release == release) remove(e);
    e = next;
  }
}

// A prelude held by the host: its own cache without a budget (nothing is
// evicted), so every pointer it handed out lives as long as the handle.
struct dcc_prelude {
  dcc_prelude_cache store{0};
};

extern "C" {

dcc_prelude_cache* dcc_prelude_cache_create(size_t max_bytes) noexcept {
  auto* cache = new (std::nothrow) dcc_prelude_cache(max_bytes);
  if (cache == nullptr) {
    fail(DCC_ERR_OUT_OF_MEMORY, "dcc_prelude_cache_create: out of memory");
  }
  return cache;
}

dcc_prelude_cache* dcc_default_prelude_cache(void) noexcept {
  static dcc_prelude_cache cache(default_budget());
  return &cache;
}

void dcc_prelude_cache_destroy(dcc_prelude_cache* cache) noexcept {
  if (cache == nullptr || cache == dcc_default_prelude_cache()) return;
  delete cache;
}

dcc_status dcc_prelude_get(dcc_prelude_cache* cache, uint64_t kind, const void* key,
                           size_t key_bytes, size_t out_bytes, dcc_prelude_fn compute, void* ctx,
                           const void** out) noexcept {
  if (cache == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: cache is NULL", kFn);
  if (key == nullptr && key_bytes > 0) {
    return fail(DCC_ERR_NULL_POINTER, "{}: key is NULL but key_bytes is {}", kFn, key_bytes);
  }
  if (compute == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: compute is NULL", kFn);
  if (out == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: out is NULL", kFn);
  return cache->get(kind, key, key_bytes, out_bytes, compute, nullptr, ctx, out);
}

dcc_status dcc_prelude_get_ex(dcc_prelude_cache* cache, uint64_t kind, const void* key,
                              size_t key_bytes, size_t out_bytes, dcc_prelude_fn compute,
                              dcc_prelude_release_fn release, void* ctx, const void** out) noexcept {
  constexpr const char* fn = "dcc_prelude_get_ex";
  if (cache == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: cache is NULL", fn);
  if (key == nullptr && key_bytes > 0) {
    return fail(DCC_ERR_NULL_POINTER, "{}: key is NULL but key_bytes is {}", fn, key_bytes);
  }
  if (compute == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: compute is NULL", fn);
  if (out == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: out is NULL", fn);
  return cache->get(kind, key, key_bytes, out_bytes, compute, release, ctx, out);
}

dcc_status dcc_prelude_acquire(dcc_prelude_cache* cache, uint64_t kind, const void* key,
                               size_t key_bytes, size_t out_bytes, dcc_prelude_fn compute,
                               dcc_prelude_release_fn release, void* ctx, const void** out,
                               dcc_prelude_pin** pin) noexcept {
  constexpr const char* fn = "dcc_prelude_acquire";
  if (cache == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: cache is NULL", fn);
  if (key == nullptr && key_bytes > 0) {
    return fail(DCC_ERR_NULL_POINTER, "{}: key is NULL but key_bytes is {}", fn, key_bytes);
  }
  if (compute == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: compute is NULL", fn);
  if (out == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: out is NULL", fn);
  if (pin == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: pin is NULL", fn);
  Entry* e = nullptr;
  const dcc_status st = cache->get(kind, key, key_bytes, out_bytes, compute, release, ctx, out, &e);
  if (st == DCC_OK) *pin = reinterpret_cast<dcc_prelude_pin*>(e);
  return st;
}

void dcc_prelude_unpin(dcc_prelude_pin* pin) noexcept {
  if (pin == nullptr) return;
  Entry* e = reinterpret_cast<Entry*>(pin);
  e->cache->unpin(e);
}

dcc_status dcc_prelude_cache_drop(dcc_prelude_cache* cache, dcc_prelude_release_fn release) noexcept {
  if (cache == nullptr) return fail(DCC_ERR_NULL_POINTER, "dcc_prelude_cache_drop: cache is NULL");
  if (release == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "dcc_prelude_cache_drop: release is NULL");
  }
  cache->drop(release);
  return DCC_OK;
}

dcc_prelude* dcc_prelude_create(void) noexcept {
  auto* p = new (std::nothrow) dcc_prelude;
  if (p == nullptr) fail(DCC_ERR_OUT_OF_MEMORY, "dcc_prelude_create: out of memory");
  return p;
}

void dcc_prelude_destroy(dcc_prelude* prelude) noexcept { delete prelude; }

dcc_status dcc_prelude_hold(dcc_prelude* prelude, uint64_t kind, const void* key, size_t key_bytes,
                            size_t out_bytes, dcc_prelude_fn compute, dcc_prelude_release_fn release,
                            void* ctx, const void** out) noexcept {
  constexpr const char* fn = "dcc_prelude_hold";
  if (prelude == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: prelude is NULL", fn);
  if (key == nullptr && key_bytes > 0) {
    return fail(DCC_ERR_NULL_POINTER, "{}: key is NULL but key_bytes is {}", fn, key_bytes);
  }
  if (compute == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: compute is NULL", fn);
  if (out == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: out is NULL", fn);
  return prelude->store.get(kind, key, key_bytes, out_bytes, compute, release, ctx, out);
}

dcc_status dcc_prelude_find(const dcc_prelude* prelude, uint64_t kind, const void* key,
                            size_t key_bytes, size_t out_bytes, const void** out) noexcept {
  constexpr const char* fn = "dcc_prelude_find";
  if (prelude == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: prelude is NULL", fn);
  if (key == nullptr && key_bytes > 0) {
    return fail(DCC_ERR_NULL_POINTER, "{}: key is NULL but key_bytes is {}", fn, key_bytes);
  }
  if (out == nullptr) return fail(DCC_ERR_NULL_POINTER, "{}: out is NULL", fn);
  auto& store = const_cast<dcc_prelude_cache&>(prelude->store);
  std::lock_guard<std::mutex> lock(store.mutex);
  if (const Entry* e = store.find(kind, key, key_bytes)) {
    if (e->out_bytes != out_bytes) {
      return fail(DCC_ERR_SIZE_MISMATCH,
                  "{}: the held prelude of kind {:#x} has {} bytes, but {} were asked for", fn, kind,
                  e->out_bytes, out_bytes);
    }
    *out = e->buffer;
    return DCC_OK;
  }
  for (const auto& [k, e] : store.entries) {
    if (k.kind == kind && e->ready) {
      return fail(DCC_ERR_SIZE_MISMATCH,
                  "{}: the prelude handle was made for other sizes or lengths than these arguments' "
                  "(kind {:#x})",
                  fn, kind);
    }
  }
  return fail(DCC_ERR_INVALID_ARGUMENT,
              "{}: the prelude handle holds no arrays of kind {:#x}: make it (or add to it) with "
              "this function's _prelude entry point",
              fn, kind);
}

dcc_status dcc_prelude_stats(const dcc_prelude* prelude, int64_t* entries, size_t* bytes) noexcept {
  if (prelude == nullptr) return fail(DCC_ERR_NULL_POINTER, "dcc_prelude_stats: prelude is NULL");
  auto& store = const_cast<dcc_prelude_cache&>(prelude->store);
  std::lock_guard<std::mutex> lock(store.mutex);
  if (entries) *entries = static_cast<int64_t>(store.entries.size());
  if (bytes) *bytes = store.bytes;
  return DCC_OK;
}

dcc_status dcc_prelude_cache_stats(dcc_prelude_cache* cache, uint64_t* hits, uint64_t* misses,
                                   size_t* bytes) noexcept {
  if (cache == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "dcc_prelude_cache_stats: cache is NULL");
  }
  std::lock_guard<std::mutex> lock(cache->mutex);
  if (hits) *hits = cache->hits;
  if (misses) *misses = cache->misses;
  if (bytes) *bytes = cache->bytes;
  return DCC_OK;
}

dcc_status dcc_prelude_cache_clear(dcc_prelude_cache* cache) noexcept {
  if (cache == nullptr) {
    return fail(DCC_ERR_NULL_POINTER, "dcc_prelude_cache_clear: cache is NULL");
  }
  cache->clear();
  return DCC_OK;
}

}  // extern "C"
