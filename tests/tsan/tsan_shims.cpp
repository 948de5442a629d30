// LLVM 19's tsan pass calls these; clang 14's TSan runtime predates them.
// Forwarding to the intercepted libc functions keeps the accesses checked.
// Linked into the TSan build of a generated library (scripts/tsan_check.sh).
#include <cstddef>
#include <cstring>

extern "C" void* __tsan_memset(void* d, int c, size_t n) { return memset(d, c, n); }
extern "C" void* __tsan_memcpy(void* d, const void* s, size_t n) { return memcpy(d, s, n); }
extern "C" void* __tsan_memmove(void* d, const void* s, size_t n) { return memmove(d, s, n); }
