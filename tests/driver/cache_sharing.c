/* driver/runtime: two copies of one generated library (A.so, B.so), loaded
 * with dlopen(RTLD_LOCAL) as Python's ctypes loads them, call softmax on the
 * same lengths; then each copy's view of the default prelude cache is read
 * through its own dcc_prelude_cache_stats.
 *
 *   cache_sharing A.so B.so shared|separate
 *
 * `shared` (libraries built with --runtime=shared): one libdccrt.so, so B's
 * call finds the arrays A's computed: 1 miss and 1 hit, seen alike from
 * both. `separate` (the default --runtime=static): each library has its own
 * copy of the runtime and cache, so each computed its own: 1 miss, 0 hits
 * in each. Prints "cache sharing: OK" when the counts are as expected. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "softmax.h"

typedef dcc_status (*softmax_fn)(const Seqs*, Seqs*);
typedef dcc_prelude_cache* (*cache_fn)(void);
typedef dcc_status (*stats_fn)(dcc_prelude_cache*, uint64_t*, uint64_t*, size_t*);

static int stats(void* lib, uint64_t* hits, uint64_t* misses) {
  cache_fn cache = (cache_fn)dlsym(lib, "dcc_default_prelude_cache");
  stats_fn get = (stats_fn)dlsym(lib, "dcc_prelude_cache_stats");
  return cache && get && get(cache(), hits, misses, NULL) == DCC_OK;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  void* a = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!a || !b) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
  int32_t len[2] = {2, 1};
  Seqs in = {x, 6, len, 2, 2, 2}, out = {y, 6, len, 2, 2, 2};
  softmax_fn fa = (softmax_fn)dlsym(a, "softmax"), fb = (softmax_fn)dlsym(b, "softmax");
  if (!fa || !fb || fa(&in, &out) != DCC_OK || fb(&in, &out) != DCC_OK) {
    printf("softmax failed\n");
    return 1;
  }
  uint64_t ha = 0, ma = 0, hb = 0, mb = 0;
  if (!stats(a, &ha, &ma) || !stats(b, &hb, &mb)) {
    printf("no dcc_prelude_cache_stats\n");
    return 1;
  }
  printf("A sees %llu hit(s), %llu miss(es); B sees %llu hit(s), %llu miss(es)\n", (unsigned long long)ha,
         (unsigned long long)ma, (unsigned long long)hb, (unsigned long long)mb);
  int ok = strcmp(argv[3], "shared") == 0 ? (ha == 1 && ma == 1 && hb == 1 && mb == 1)
                                          : (ha == 0 && ma == 1 && hb == 0 && mb == 1);
  printf("cache sharing: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
