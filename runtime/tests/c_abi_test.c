/* Proves that dccrt.h is valid C99 (built with -std=c99 -pedantic-errors)
 * and that the library is callable from C: packs the README's example, reads
 * offsets, uses the prelude cache and the thread pool. Prints "ok" and exits 0
 * on success. */
#include <stdio.h>
#include <string.h>

#include "dccrt.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static dcc_status compute_offsets(void* ctx, void* out, size_t out_bytes) {
  const int32_t* lengths = (const int32_t*)ctx;
  if (out_bytes != 4 * sizeof(int64_t)) return dcc_set_error(DCC_ERR_SIZE_MISMATCH, "bad size");
  return dcc_offsets_from_lengths(lengths, 3, (int64_t*)out);
}

static void add_squares(void* ctx, int64_t begin, int64_t end) {
  int64_t* out = (int64_t*)ctx;
  int64_t i;
  for (i = begin; i < end; ++i) out[i] = i * i;
}

int main(void) {
  const int32_t lengths[3] = {2, 0, 3};
  const float seq0[4] = {1, 2, 3, 4};
  const float seq2[6] = {5, 6, 7, 8, 9, 10};
  const void* sequences[3];
  float packed[10];
  int64_t offsets[4];
  int32_t cu[4];
  const int32_t bad[2] = {1, -2};
  dcc_prelude_cache* cache;
  const void* prelude = NULL;
  uint64_t hits = 0, misses = 0;
  size_t bytes = 0;
  int64_t squares[1000];
  int i;

  CHECK(dcc_abi_version() == DCCRT_ABI_VERSION);
  sequences[0] = seq0;
  sequences[1] = NULL;
  sequences[2] = seq2;
  CHECK(dcc_pack(sequences, lengths, 3, 2, sizeof(float), packed, 5) == DCC_OK);
  for (i = 0; i < 10; ++i) CHECK(packed[i] == (float)(i + 1));

  CHECK(dcc_offsets_from_lengths(lengths, 3, offsets) == DCC_OK);
  CHECK(offsets[0] == 0 && offsets[1] == 2 && offsets[2] == 2 && offsets[3] == 5);
  CHECK(dcc_cu_seqlens_from_lengths(lengths, 3, cu) == DCC_OK);
  CHECK(cu[3] == 5);

  CHECK(dcc_offsets_from_lengths(bad, 2, offsets) == DCC_ERR_NEGATIVE_LENGTH);
  CHECK(strcmp(dcc_last_error(),
               "dcc_offsets_from_lengths: lengths[1] is -2; lengths must be >= 0") == 0);
  CHECK(offsets[3] == 5); /* untouched */
  CHECK(strcmp(dcc_status_name(DCC_ERR_NEGATIVE_LENGTH), "DCC_ERR_NEGATIVE_LENGTH") == 0);
  CHECK(strcmp(dcc_status_name((dcc_status)99), "DCC_ERR_UNKNOWN") == 0);
  dcc_clear_error();
  CHECK(dcc_last_error()[0] == '\0');

  cache = dcc_prelude_cache_create(0);
  CHECK(cache != NULL);
  CHECK(dcc_prelude_get(cache, 1, lengths, sizeof lengths, 4 * sizeof(int64_t), compute_offsets,
                        (void*)lengths, &prelude) == DCC_OK);
  CHECK(prelude != NULL && ((const int64_t*)prelude)[3] == 5);
  CHECK(dcc_prelude_get(cache, 1, lengths, sizeof lengths, 4 * sizeof(int64_t), compute_offsets,
                        (void*)lengths, &prelude) == DCC_OK);
  CHECK(dcc_prelude_cache_stats(cache, &hits, &misses, &bytes) == DCC_OK);
  CHECK(hits == 1 && misses == 1 && bytes == 4 * sizeof(int64_t));
  dcc_prelude_cache_destroy(cache);
  CHECK(dcc_default_prelude_cache() != NULL);

  CHECK(dcc_get_num_threads() >= 1);
  CHECK(dcc_parallel_for(1000, 0, add_squares, squares) == DCC_OK);
  for (i = 0; i < 1000; ++i) CHECK(squares[i] == (int64_t)i * i);

  {
    void* p = dcc_alloc(100);
    CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
    dcc_free(p);
  }

  if (failures) return 1;
  printf("ok\n");
  return 0;
}
