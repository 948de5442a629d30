/* The direct C call of bench/python/overhead.py: examples/mha.toy's `mha`
 * on B = 1, one query row and one key row, H x D given on the command line,
 * outputs allocated once (f_meta once, then f per call, as a C host does).
 * Prints the median and the minimum over ROUNDS rounds of the wall time per
 * call and the median of the process's CPU time per call, in microseconds.
 *
 *   cc -O2 -I DIR overhead_c.c DIR/mha.so -o overhead_c && ./overhead_c H D CALLS ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mha.h"

static double now_us(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 5) return fprintf(stderr, "usage: overhead_c H D CALLS ROUNDS\n"), 2;
  int64_t H = atoll(argv[1]), D = atoll(argv[2]);
  long calls = atol(argv[3]), rounds = atol(argv[4]);
  float* q = calloc((size_t)(H * D), sizeof(float));
  float* k = calloc((size_t)(H * D), sizeof(float));
  float* v = calloc((size_t)(H * D), sizeof(float));
  float* o = calloc((size_t)(H * D), sizeof(float));
  for (int64_t i = 0; i < H * D; ++i) q[i] = k[i] = v[i] = (float)i / (float)(H * D);
  int32_t ql[1] = {1}, kl[1] = {1};
  PackedQueries qs = {q, H * D, ql, 1, 1, H, D};
  PackedKV kvs = {k, H * D, v, H * D, kl, 1, 1, H, D};
  PackedQueries out;
  if (mha_meta(&qs, &kvs, &out) != DCC_OK) return fprintf(stderr, "%s\n", dcc_last_error()), 1;
  out.data = o;
  double* per = malloc(sizeof(double) * (size_t)rounds);
  double* cpu = malloc(sizeof(double) * (size_t)rounds);
  for (long r = 0; r < rounds; ++r) {
    double t0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_PROCESS_CPUTIME_ID);
    for (long c = 0; c < calls; ++c)
      if (mha(&qs, &kvs, &out) != DCC_OK) return fprintf(stderr, "%s\n", dcc_last_error()), 1;
    per[r] = (now_us(CLOCK_MONOTONIC) - t0) / (double)calls;
    cpu[r] = (now_us(CLOCK_PROCESS_CPUTIME_ID) - c0) / (double)calls;
  }
  qsort(per, (size_t)rounds, sizeof(double), cmp);
  qsort(cpu, (size_t)rounds, sizeof(double), cmp);
  printf("%.3f %.3f %.3f\n", per[rounds / 2], per[0], cpu[rounds / 2]);
  return 0;
}
